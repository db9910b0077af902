// Package models names the hosted language models Verdict can ask (OpenAI, Google Gemini,
// Anthropic: a Provider and its model, written "provider:model"), and the errors a call to one
// ends with ([*Error], whose Kind is one of the Err values below). It holds no client: the
// providers' SDKs are in internal/ai/providers, which only the wiring imports, so the services
// and the front doors that speak of models do not carry them.
package models

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"verdict/internal/redact"
)

// Provider names a model provider, as it appears before the colon of a model string.
type Provider string

const (
	OpenAI    Provider = "openai"
	Gemini    Provider = "gemini"
	Anthropic Provider = "anthropic"
)

// Providers lists every supported provider.
var Providers = []Provider{OpenAI, Gemini, Anthropic}

// Valid reports whether p is one of Providers.
func (p Provider) Valid() bool {
	for _, k := range Providers {
		if p == k {
			return true
		}
	}
	return false
}

// Builtin is the model string of the built-in, rule-based analysis: not a hosted model.
const Builtin = "builtin"

// DefaultModels is a cheap, current model of each provider, offered when an organization's
// list of models is built.
var DefaultModels = map[Provider]string{
	OpenAI:    "gpt-5.4-mini",
	Gemini:    "gemini-3.5-flash-lite",
	Anthropic: "claude-haiku-4-5",
}

// FormatModel is the inverse of ParseModel: "<provider>:<model>".
func FormatModel(p Provider, model string) string { return string(p) + ":" + model }

// ParseModel splits a "<provider>:<model>" string such as "openai:gpt-5.4-mini". The
// built-in analysis ("builtin") is not a model: it returns ErrBuiltin.
func ParseModel(s string) (Provider, string, error) {
	if s == Builtin {
		return "", "", ErrBuiltin
	}
	name, model, ok := strings.Cut(s, ":")
	p := Provider(name)
	if !ok || !p.Valid() {
		return "", "", &Error{Op: "parse model", Kind: ErrUnknownProvider, Detail: redact.Clean(s, "")}
	}
	if err := CheckModel(model); err != nil {
		return "", "", &Error{Provider: p, Op: "parse model", Kind: ErrBadModel, Detail: err.Error()}
	}
	return p, model, nil
}

// CheckModel keeps a model name to the characters providers use, since it lands in URL paths
// (Gemini puts it in the path of every call).
func CheckModel(model string) error {
	if model == "" || len(model) > 200 {
		return errors.New("the model name is empty or longer than 200 bytes")
	}
	for _, r := range model {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-:/", r))) {
			return fmt.Errorf("the model name has a character %q that model names do not use", r)
		}
	}
	if strings.Contains(model, "..") || strings.HasPrefix(model, "/") || strings.HasSuffix(model, "/") {
		return errors.New("the model name is not a plain name")
	}
	return nil
}

// Errors, used as the Kind of an [*Error]: test them with errors.Is.
var (
	ErrBuiltin         = errors.New("the built-in analysis is not a model")
	ErrUnknownProvider = errors.New("unknown model provider")
	ErrBadModel        = errors.New("invalid model name")
	ErrNoKey           = errors.New("no API key")
	ErrBadEvidence     = errors.New("the evidence or data is not a JSON document of an acceptable size")
	ErrBadInstructions = errors.New("the instructions are empty or too long")
	ErrKeyRefused      = errors.New("the provider refused the API key")
	ErrRateLimited     = errors.New("the provider is rate limiting this key")
	ErrProvider        = errors.New("the provider answered with an error")
	ErrUnreachable     = errors.New("the provider could not be reached")
	ErrTimeout         = errors.New("the provider did not answer in time")
	ErrTooLarge        = errors.New("the provider's response is too large")
	ErrRefused         = errors.New("the model declined to answer")
	ErrEmptyOutput     = errors.New("the model gave no answer")
	ErrInvalidOutput   = errors.New("the model's answer is not of the required shape")
)

// Error is every error this package returns.
type Error struct {
	Provider   Provider // empty when the provider is unknown
	Op         string   // "analyse", "plan", "check key" or "parse model"
	Kind       error    // one of the Err values, or context.Canceled when the caller gave up
	StatusCode int      // the provider's HTTP status, when it answered with one
	Detail     string   // short context, never the key
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("models: ")
	if e.Provider != "" {
		b.WriteString(string(e.Provider) + " ")
	}
	b.WriteString(e.Op + ": " + e.Kind.Error())
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Kind }
