package models

import (
	"errors"
	"strings"
	"testing"
)

func TestParseModel(t *testing.T) {
	for _, tc := range []struct {
		in       string
		provider Provider
		model    string
		kind     error
	}{
		{in: "openai:gpt-5.4-mini", provider: OpenAI, model: "gpt-5.4-mini"},
		{in: "gemini:gemini-3.5-flash-lite", provider: Gemini, model: "gemini-3.5-flash-lite"},
		{in: "anthropic:claude-haiku-4-5", provider: Anthropic, model: "claude-haiku-4-5"},
		{in: "openai:ft:gpt-4o-mini:acme:triage:abc123", provider: OpenAI, model: "ft:gpt-4o-mini:acme:triage:abc123"},
		{in: "gemini:models/gemini-3.5-flash", provider: Gemini, model: "models/gemini-3.5-flash"},
		{in: "builtin", kind: ErrBuiltin},
		{in: "", kind: ErrUnknownProvider},
		{in: "gpt-5.4-mini", kind: ErrUnknownProvider},
		{in: "mistral:large", kind: ErrUnknownProvider},
		{in: "OpenAI:gpt-5.4-mini", kind: ErrUnknownProvider},
		{in: "openai:", kind: ErrBadModel},
		{in: "openai:gpt 5", kind: ErrBadModel},
		{in: "gemini:../../v1/files", kind: ErrBadModel},
		{in: "gemini:/models/x", kind: ErrBadModel},
		{in: "anthropic:claude?key=x", kind: ErrBadModel},
		{in: "anthropic:" + strings.Repeat("a", 201), kind: ErrBadModel},
	} {
		p, m, err := ParseModel(tc.in)
		if tc.kind != nil {
			if !errors.Is(err, tc.kind) {
				t.Errorf("ParseModel(%q) error = %v, want %v", tc.in, err, tc.kind)
			}
			continue
		}
		if err != nil || p != tc.provider || m != tc.model {
			t.Errorf("ParseModel(%q) = %q, %q, %v; want %q, %q", tc.in, p, m, err, tc.provider, tc.model)
		}
		if got := FormatModel(p, m); got != tc.in {
			t.Errorf("FormatModel(%q, %q) = %q, want %q", p, m, got, tc.in)
		}
	}
}

func TestDefaultModelsParse(t *testing.T) {
	for _, p := range Providers {
		model, ok := DefaultModels[p]
		if !ok {
			t.Fatalf("no default model for %s", p)
		}
		gp, gm, err := ParseModel(FormatModel(p, model))
		if err != nil || gp != p || gm != model {
			t.Errorf("default model %s:%s does not parse back: %q %q %v", p, model, gp, gm, err)
		}
	}
}

func TestErrorTextAndMatching(t *testing.T) {
	err := error(&Error{Provider: OpenAI, Op: "check key", Kind: ErrKeyRefused, StatusCode: 401})
	if !errors.Is(err, ErrKeyRefused) || errors.Is(err, ErrProvider) {
		t.Errorf("errors.Is does not follow Kind: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 401 {
		t.Errorf("errors.As failed: %v", err)
	}
	if got, want := err.Error(), "models: openai check key: the provider refused the API key (HTTP 401)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
