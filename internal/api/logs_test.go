package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestJSONStringMatchesEncodingJSON: a log escaped piece by piece, cut anywhere (inside a
// character too), reads back as encoding/json writes the whole text as one string.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	alphabet := [][]byte{[]byte("a"), []byte("Z9 "), []byte("\n"), []byte("\r\t"), []byte("\x00\x01\x1f\x7f"),
		[]byte(`"\`), []byte("<>&"), []byte("é"), []byte("✓"), []byte("😀"), []byte("\u2028\u2029"),
		[]byte("\xff"), []byte("\xe2\x82"), []byte("\xf0\x9f"), []byte("\xc3"), []byte("\x80\xbf"), []byte("\xed\xa0\x80"), // invalid
		[]byte("\b\f")}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 3000 {
		var text []byte
		for range rng.IntN(40) {
			text = append(text, alphabet[rng.IntN(len(alphabet))]...)
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		js := jsonString{w: w}
		for rest := text; len(rest) > 0; {
			k := rng.IntN(min(len(rest), 6) + 1)
			if err := js.write(rest[:k]); err != nil {
				t.Fatal(err)
			}
			rest = rest[k:]
		}
		js.flushHeld()
		w.Flush()
		want, _ := json.Marshal(string(text))
		if got := `"` + out.String() + `"`; got != string(want) {
			t.Fatalf("round %d: %q\n got  %s\n want %s", round, text, got, want)
		}
	}
}

// TestJSONStringHoldsACutCharacter: a page that ends inside a character leaves it for the next.
func TestJSONStringHoldsACutCharacter(t *testing.T) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	js := jsonString{w: w}
	if err := js.write([]byte("ok \xe2\x9c")); err != nil { // "✓" is e2 9c 93
		t.Fatal(err)
	}
	if n := js.dropHeld(); n != 2 {
		t.Fatalf("held %d bytes, want 2", n)
	}
	w.Flush()
	if out.String() != "ok " {
		t.Fatalf("wrote %q", out.String())
	}
}

func TestParseOffset(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want int64
		ok   bool
	}{
		{[]string{"0"}, 0, true}, {[]string{"1048576"}, 1048576, true}, {[]string{"999999999999999999"}, 999999999999999999, true},
		{[]string{""}, 0, false}, {[]string{"-1"}, 0, false}, {[]string{"+1"}, 0, false}, {[]string{"1.5"}, 0, false},
		{[]string{"abc"}, 0, false}, {[]string{"1e3"}, 0, false}, {[]string{" 1"}, 0, false}, {[]string{"1", "2"}, 0, false},
		{[]string{"9999999999999999999"}, 0, false},
	} {
		if n, ok := parseOffset(c.in); n != c.want || ok != c.ok {
			t.Errorf("parseOffset(%q) = %d, %v; want %d, %v", c.in, n, ok, c.want, c.ok)
		}
	}
}
