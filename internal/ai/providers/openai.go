package providers

import (
	"context"
	"errors"
	"verdict/internal/ai/models"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAIOptions configures the services directly rather than through openai.NewClient, which
// would add OPENAI_ORG_ID, OPENAI_PROJECT_ID and other ambient settings of the server to an
// organization's own key.
func openAIOptions(cl *call) []option.RequestOption {
	return []option.RequestOption{
		option.WithBaseURL(cl.baseURL),
		option.WithAPIKey(cl.key),
		option.WithHTTPClient(cl.http),
		option.WithMaxRetries(maxRetries),
	}
}

// askOpenAI uses Chat Completions, which OpenAI-compatible servers behind OPENAI_BASE_URL
// also speak, with a strict JSON Schema response format.
func askOpenAI(ctx context.Context, cl *call, model string, r query) (string, error) {
	chat := openai.NewChatService(openAIOptions(cl)...)
	res, err := chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(r.instructions),
			openai.UserMessage(r.user),
		},
		MaxCompletionTokens: openai.Int(r.maxTokens),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
				JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   r.schemaName,
					Strict: openai.Bool(true),
					Schema: r.schema(true),
				},
			},
		},
	})
	if err != nil {
		return "", err
	}
	if len(res.Choices) == 0 {
		return "", &outcome{models.ErrEmptyOutput, "no choices"}
	}
	choice := res.Choices[0]
	switch {
	case choice.Message.Refusal != "":
		return "", &outcome{models.ErrRefused, "refusal"}
	case choice.FinishReason == "content_filter":
		return "", &outcome{models.ErrRefused, "content filter"}
	case choice.FinishReason == "length":
		return "", &outcome{models.ErrInvalidOutput, "the answer was cut at the token limit"}
	case choice.Message.Content == "":
		return "", &outcome{models.ErrEmptyOutput, "empty content"}
	}
	return choice.Message.Content, nil
}

// checkOpenAI lists the models: free, and refused with 401 for a bad key.
func checkOpenAI(ctx context.Context, cl *call) error {
	models := openai.NewModelService(openAIOptions(cl)...)
	_, err := models.List(ctx)
	return err
}

func openAIMessage(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.Message
	}
	return ""
}
