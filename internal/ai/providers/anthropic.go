package providers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"verdict/internal/ai/models"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// newAnthropic builds a client that ignores the server's environment (ANTHROPIC_API_KEY,
// profiles, federation): the key is the one the call brings. The request timeout is the
// call's own bound; without one, the SDK guesses how long an answer of MaxTokens may take
// and refuses a plan's (32k tokens) as needing streaming.
func newAnthropic(cl *call) anthropic.Client {
	return anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cl.baseURL),
		option.WithAPIKey(cl.key),
		option.WithHTTPClient(cl.http),
		option.WithMaxRetries(maxRetries),
		option.WithRequestTimeout(cl.timeout),
	)
}

// askAnthropic uses the Messages API's structured outputs (output_config.format), which
// constrains the answer to the schema like OpenAI's strict mode, without a tool round trip.
func askAnthropic(ctx context.Context, cl *call, model string, r query) (string, error) {
	client := newAnthropic(cl)
	res, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     model,
		MaxTokens: r.maxTokens,
		System:    []anthropic.TextBlockParam{{Text: r.instructions}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(r.user))},
		OutputConfig: anthropic.OutputConfigParam{
			Format: anthropic.JSONOutputFormatParam{Schema: r.schema(false)},
		},
	})
	if err != nil {
		return "", err
	}
	switch res.StopReason {
	case anthropic.StopReasonRefusal:
		return "", &outcome{models.ErrRefused, "refusal"}
	case anthropic.StopReasonMaxTokens:
		return "", &outcome{models.ErrInvalidOutput, "the answer was cut at the token limit"}
	}
	var text strings.Builder
	for _, block := range res.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	if text.Len() == 0 {
		return "", &outcome{models.ErrEmptyOutput, "no text content"}
	}
	return text.String(), nil
}

// checkAnthropic lists one model: free, and refused with 401 for a bad key.
func checkAnthropic(ctx context.Context, cl *call) error {
	client := newAnthropic(cl)
	_, err := client.Models.List(ctx, anthropic.ModelListParams{Limit: anthropic.Int(1)})
	return err
}

// anthropicMessage reads error.message from the body; the SDK's own Error() quotes the body
// and the URL whole.
func anthropicMessage(err error) string {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return ""
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(apiErr.RawJSON()), &body) != nil {
		return ""
	}
	return body.Error.Message
}
