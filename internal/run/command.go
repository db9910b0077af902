package run

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// ParseCommand splits a run's command into the words of its entrypoint as a POSIX shell would
// (quotes, backslash escapes, line continuations), without running a shell: the image need
// not have one. Nothing is expanded, so whatever a shell would expand or treat as an operator
// is refused rather than passed on with another meaning: unquoted $ ` * ? [ { ~, expansions
// inside double quotes, variable assignments, redirections, pipes, lists, comments and
// compound commands. A blank command has no words (the image's own entrypoint runs).
func ParseCommand(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if strings.ContainsRune(s, 0) {
		return nil, errors.New("command must not contain NUL characters")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX), syntax.KeepComments(true)).Parse(strings.NewReader(s), "")
	if err != nil {
		var pe syntax.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("command is not valid: %s (%s)", pe.Text, at(pe.Pos))
		}
		var le syntax.LangError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("command is not valid: it uses %s, which a POSIX shell lacks (%s)", le.Feature, at(le.Pos))
		}
		return nil, fmt.Errorf("command is not valid: %v", err)
	}
	if len(f.Last) > 0 {
		return nil, commentError(f.Last[0].Hash)
	}
	switch {
	case len(f.Stmts) == 0:
		return nil, errors.New("command has no words")
	case len(f.Stmts) > 1:
		return nil, fmt.Errorf("command must be one command: a second one starts at %s (;, & and line breaks separate commands; quote them to pass them literally)", at(f.Stmts[1].Pos()))
	}
	st := f.Stmts[0]
	switch {
	case len(st.Comments) > 0:
		return nil, commentError(st.Comments[0].Hash)
	case st.Negated:
		return nil, errors.New("command must not start with the negation operator (!)")
	case st.Background || st.Coprocess || st.Disown:
		return nil, errors.New("command must not run in the background (&)")
	case st.Semicolon.IsValid():
		return nil, fmt.Errorf("command must not contain ; (%s); quote it to pass it literally", at(st.Semicolon))
	case len(st.Redirs) > 0:
		return nil, fmt.Errorf("command must not redirect input or output (%s); quote < and > to pass them literally", at(st.Redirs[0].OpPos))
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, errors.New("command must be a simple command: pipes, && and ||, subshells, groups and shell keywords are not supported; quote the operators to pass them literally")
	}
	if len(call.Assigns) > 0 {
		return nil, fmt.Errorf("command must not set variables (%s); set them with envVars", at(call.Assigns[0].Pos()))
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		if err := literalWord(s, w); err != nil {
			return nil, err
		}
		// Only quotes and escapes are left to remove: one word gives one field.
		fields, err := expand.Fields(nil, w)
		if err != nil || len(fields) != 1 {
			return nil, fmt.Errorf("command: the word at %s cannot be read literally", at(w.Pos()))
		}
		words = append(words, fields[0])
	}
	if len(words) == 0 || words[0] == "" {
		return nil, errors.New("command must start with a program name")
	}
	return words, nil
}

// unquotedSpecial are the characters a shell expands (or, for {, a shell like bash expands)
// when they are not quoted.
const unquotedSpecial = "$`*?[{~"

// literalWord refuses a word with any part a shell would expand.
func literalWord(src string, w *syntax.Word) error {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			// The value is as written: a backslash escapes the next character.
			for i := 0; i < len(p.Value); i++ {
				switch c := p.Value[i]; {
				case c == '\\':
					i++
				case strings.IndexByte(unquotedSpecial, c) >= 0:
					return fmt.Errorf("command: unquoted %q (%s) would be expanded by a shell, and nothing is expanded here: quote it ('%c') to pass it literally",
						string(c), at(syntax.NewPos(p.ValuePos.Offset()+uint(i), p.ValuePos.Line(), p.ValuePos.Col()+uint(i))), c)
				}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return expansionError(src, p)
			}
		case *syntax.DblQuoted:
			if p.Dollar {
				return expansionError(src, p)
			}
			for _, inner := range p.Parts {
				if _, ok := inner.(*syntax.Lit); !ok {
					return expansionError(src, inner)
				}
			}
		default:
			return expansionError(src, part)
		}
	}
	return nil
}

func expansionError(src string, n syntax.Node) error {
	text := "an expansion"
	if from, to := n.Pos().Offset(), n.End().Offset(); from < to && to <= uint(len(src)) {
		text = src[from:to]
		if len(text) > 40 {
			text = strings.ToValidUTF8(text[:40], "") + "…"
		}
		text = strconv.Quote(text)
	}
	return fmt.Errorf("command: %s (%s) would be expanded by a shell, and no shell runs here: quote it with '...' to pass it literally, or run sh -c '...' to have a shell expand it", text, at(n.Pos()))
}

func commentError(p syntax.Pos) error {
	return fmt.Errorf("command must not contain a comment (# at %s); quote # to pass it literally", at(p))
}

// at names a position of the command for a person.
func at(p syntax.Pos) string {
	if p.Line() > 1 {
		return fmt.Sprintf("line %d, column %d", p.Line(), p.Col())
	}
	return fmt.Sprintf("column %d", p.Col())
}

// HostAlias is the name under which a run's container reaches the host.
const HostAlias = "host.docker.internal"

// containerURL rewrites a base URL on the host's loopback so that it reaches the host from
// inside the container (through the engine's host gateway). Other URLs pass unchanged.
func containerURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return raw
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(HostAlias, port)
	} else {
		u.Host = HostAlias
	}
	return u.String()
}
