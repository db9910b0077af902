package domain

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/secure/precis"
)

// Names and e-mail addresses end up in mail bodies, audit entries and other members' screens,
// so characters that hide or reorder text are refused: a bidi override turns
// "Eve \u202eNIMDA" into "Eve ADMIN" on screen, a CR/LF breaks a plain-text mail, and a
// zero-width space or a Cyrillic "а" makes an address look like another one.

// displayName is the PRECIS FreeformClass (RFC 8264), used only to check characters: it
// refuses controls, default-ignorable code points (bidi embeddings, overrides and isolates,
// zero-width spaces, soft hyphens, variation selectors), joiners outside the contexts that
// need them (ZWNJ in Persian is kept), private-use and unassigned code points.
var displayName = precis.NewFreeform()

// hiddenOrBreaking are the categories refused on top of the PRECIS checks, so the rule holds
// whatever Unicode version the tables follow: controls, format characters (bidi marks,
// zero-width characters), line and paragraph separators, private use and surrogates.
var hiddenOrBreaking = []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs}

// validDisplayName reports whether s, trimmed, has min to MaxNameLength characters and only
// visible ones (letters, marks, digits, punctuation, symbols, spaces).
func validDisplayName(s string, min int) bool {
	return visibleLine(strings.TrimSpace(s), min, MaxNameLength)
}

// visibleLine reports whether s has min to max characters, all visible ones (letters, marks,
// digits, punctuation, symbols, spaces): one line, without controls or invisible formatting.
func visibleLine(s string, min, max int) bool {
	n := utf8.RuneCountInString(s)
	if n < min || n > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		// Joiners are format characters that some scripts need (ZWNJ in Persian); PRECIS
		// allows them only where they join something.
		if unicode.In(r, hiddenOrBreaking...) && !unicode.Is(unicode.Join_Control, r) {
			return false
		}
	}
	_, err := displayName.String(s)
	return err == nil
}

// visibleText reports whether s is valid UTF-8 whose characters are visible ones, line feeds
// and tabs: text of several lines, without other controls, bidi or invisible formatting
// characters (which would hide or reorder what a reader sees).
func visibleText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if unicode.In(r, hiddenOrBreaking...) && !unicode.Is(unicode.Join_Control, r) {
			return false
		}
	}
	return true
}

// validInternationalEmail checks the non-ASCII parts of an address that ValidEmail found well
// formed: it must be in NormalizeEmail's form, its local part must pass the PRECIS
// IdentifierClass (letters and digits of any script plus printable ASCII, no spaces, symbols,
// compatibility or invisible characters; RFC 8265), its domain must be a valid IDNA2008
// name, and its letters must come from one script (see singleScript).
func validInternationalEmail(s, local, domain string) bool {
	if NormalizeEmail(s) != s {
		return false
	}
	for _, r := range s {
		if unicode.In(r, hiddenOrBreaking...) || unicode.Is(unicode.Z, r) {
			return false
		}
	}
	if p, err := precis.UsernameCasePreserved.String(local); err != nil || p != local {
		return false
	}
	if _, err := idna.Registration.ToASCII(domain); err != nil {
		return false
	}
	return singleScript(s)
}

// scriptTables are unicode.Scripts without Common and Inherited (digits, punctuation,
// combining marks), which mix with any script; sorted by name so lookups are deterministic.
var scriptTables = func() []script {
	var out []script
	for name, t := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			out = append(out, script{name, t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}()

type script struct {
	name  string
	table *unicode.RangeTable
}

// scriptOf names r's script, or "" for Common, Inherited and unassigned code points.
func scriptOf(r rune) string {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	for _, s := range scriptTables {
		if unicode.Is(s.table, r) {
			return s.name
		}
	}
	return ""
}

// cjkScripts are the script combinations that UTS #39's "highly restrictive" level allows in
// one identifier, because Japanese, Chinese and Korean writing mix them.
var cjkScripts = [][]string{
	{"Han", "Hiragana", "Katakana", "Latin"},
	{"Bopomofo", "Han", "Latin"},
	{"Hangul", "Han", "Latin"},
}

// singleScript reports whether the letters of s are of one script, or of one of the CJK
// combinations (UTS #39 highly restrictive): Latin mixed with Cyrillic or Greek, the usual
// look-alikes, is refused.
func singleScript(s string) bool {
	var seen []string
	for _, r := range s {
		if sc := scriptOf(r); sc != "" && !slices.Contains(seen, sc) {
			seen = append(seen, sc)
		}
	}
	if len(seen) <= 1 {
		return true
	}
	for _, allowed := range cjkScripts {
		if !slices.ContainsFunc(seen, func(sc string) bool { return !slices.Contains(allowed, sc) }) {
			return true
		}
	}
	return false
}
