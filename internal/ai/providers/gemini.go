package providers

import (
	"context"
	"errors"
	"strings"
	"verdict/internal/ai/models"

	"google.golang.org/genai"
)

// newGemini builds a Gemini API client. The backend and base URL are set explicitly so that
// GOOGLE_GENAI_USE_VERTEXAI or GOOGLE_GEMINI_BASE_URL in the server's environment change
// nothing; the key is never empty here, so GEMINI_API_KEY is not read either.
func newGemini(ctx context.Context, cl *call) (*genai.Client, error) {
	return genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     cl.key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: cl.http,
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      cl.baseURL,
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr(int32(maxRetries + 1))},
		},
	})
}

// askGemini asks for JSON with responseJsonSchema, which takes standard JSON Schema
// (additionalProperties, minimum, maximum) where responseSchema takes an OpenAPI subset.
func askGemini(ctx context.Context, cl *call, model string, r query) (string, error) {
	client, err := newGemini(ctx, cl)
	if err != nil {
		return "", err
	}
	schema := r.schema(true)
	if r.order != nil {
		// Gemini writes the properties in this order.
		schema["propertyOrdering"] = r.order
	}
	res, err := client.Models.GenerateContent(ctx, model,
		[]*genai.Content{genai.NewContentFromText(r.user, genai.RoleUser)},
		&genai.GenerateContentConfig{
			SystemInstruction:  &genai.Content{Parts: []*genai.Part{{Text: r.instructions}}},
			ResponseMIMEType:   "application/json",
			ResponseJsonSchema: schema,
			MaxOutputTokens:    int32(r.maxTokens),
			// One request, bounded: no automatic continuation requests.
			AutomaticContinuation: genai.Ptr(false),
		})
	if err != nil {
		return "", err
	}
	if res.PromptFeedback != nil && res.PromptFeedback.BlockReason != "" {
		return "", &outcome{models.ErrRefused, "prompt blocked: " + string(res.PromptFeedback.BlockReason)}
	}
	if len(res.Candidates) == 0 || res.Candidates[0] == nil {
		return "", &outcome{models.ErrEmptyOutput, "no candidates"}
	}
	cand := res.Candidates[0]
	switch cand.FinishReason {
	case "", genai.FinishReasonStop, genai.FinishReasonUnspecified:
	case genai.FinishReasonMaxTokens:
		return "", &outcome{models.ErrInvalidOutput, "the answer was cut at the token limit"}
	default:
		return "", &outcome{models.ErrRefused, "finish reason " + string(cand.FinishReason)}
	}
	var text strings.Builder
	if cand.Content != nil {
		for _, part := range cand.Content.Parts {
			if part != nil && !part.Thought {
				text.WriteString(part.Text)
			}
		}
	}
	if text.Len() == 0 {
		return "", &outcome{models.ErrEmptyOutput, "no text parts"}
	}
	return text.String(), nil
}

// checkGemini lists one model: free, and refused for a bad key.
func checkGemini(ctx context.Context, cl *call) error {
	client, err := newGemini(ctx, cl)
	if err != nil {
		return err
	}
	_, err = client.Models.List(ctx, &genai.ListModelsConfig{PageSize: 1})
	return err
}

// geminiMessage is the API error's message, and whether it says the key is invalid: the
// Gemini API answers a bad key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID.
func geminiMessage(err error) (string, bool) {
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		return "", false
	}
	for _, d := range apiErr.Details {
		if reason, _ := d["reason"].(string); reason == "API_KEY_INVALID" {
			return apiErr.Message, true
		}
	}
	return apiErr.Message, false
}
