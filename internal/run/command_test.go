package run

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// acceptedCommands are commands ParseCommand splits, with the words a POSIX shell gives.
var acceptedCommands = []struct {
	in   string
	want []string
}{
	{`npx playwright test`, []string{"npx", "playwright", "test"}},
	{"  npx\tplaywright   test \n", []string{"npx", "playwright", "test"}},
	{`pytest -q -k "not slow" 'a b' c\ d`, []string{"pytest", "-q", "-k", "not slow", "a b", "c d"}},
	{`echo "a\nb"`, []string{"echo", `a\nb`}},                           // in double quotes \ escapes only $ ` " \ and newline
	{`echo a\nb`, []string{"echo", "anb"}},                              // unquoted, \ escapes any character
	{`echo "a\"b\\c\$d\` + "`" + `e"`, []string{"echo", "a\"b\\c$d`e"}}, // the escapable ones
	{`echo 'a\"b $HOME *'`, []string{"echo", `a\"b $HOME *`}},
	{`echo 'it'\''s'`, []string{"echo", "it's"}},
	{`echo --grep="@smoke" --project=chromium`, []string{"echo", "--grep=@smoke", "--project=chromium"}},
	{`echo "" '' x`, []string{"echo", "", "", "x"}},
	{`echo a"b"'c'd`, []string{"echo", "abcd"}},
	{`echo \$HOME \* \~ \{a,b\} "*.ts" '~/x' "[a]"`, []string{"echo", "$HOME", "*", "~", "{a,b}", "*.ts", "~/x", "[a]"}},
	{`echo "a;b" 'c|d' e\&f "g > h" '#'`, []string{"echo", "a;b", "c|d", "e&f", "g > h", "#"}},
	{`echo a#b x=1 -- !x a!`, []string{"echo", "a#b", "x=1", "--", "!x", "a!"}},
	{"echo a \\\n  b", []string{"echo", "a", "b"}},
	{"echo \"multi\nline\"", []string{"echo", "multi\nline"}},
	{`echo "ünïcødé ✓" '😀'`, []string{"echo", "ünïcødé ✓", "😀"}},
	{`echo "a$"`, []string{"echo", "a$"}},
}

func TestParseCommand(t *testing.T) {
	for _, c := range acceptedCommands {
		got, err := ParseCommand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, blank := range []string{"", "   ", "\n\t "} {
		if got, err := ParseCommand(blank); got != nil || err != nil {
			t.Errorf("ParseCommand(%q) = %q, %v; want no words and no error", blank, got, err)
		}
	}
	for _, c := range []struct{ in, msg string }{
		{`pytest -k "not slow`, "reached EOF without closing quote"},
		{`pytest -k 'not slow`, "reached EOF without closing quote"},
		{`echo $HOME`, `"$HOME" (column 6) would be expanded`},
		{`echo ${HOME}`, `"${HOME}"`},
		{`echo "$HOME"`, `"$HOME" (column 7)`},
		{`echo $(id)`, `"$(id)"`},
		{"echo `id`", "\"`id`\""},
		{`echo "$(id)"`, `"$(id)"`},
		{`echo $((1+1))`, `"$((1+1))"`},
		{`echo $'a'`, `unquoted "$"`},
		{`echo a$`, `unquoted "$"`},
		{`echo *.ts`, `unquoted "*" (column 6)`},
		{`echo a?`, `unquoted "?"`},
		{`echo [ab]`, `unquoted "["`},
		{`echo ~/x`, `unquoted "~"`},
		{`echo a{b,c}`, `unquoted "{"`},
		{`a; b`, "must be one command"},
		{`a;`, "must not contain ;"},
		{"a\nb", "second one starts at line 2, column 1"},
		{`a && b`, "must be a simple command"},
		{`a | b`, "must be a simple command"},
		{`(a)`, "must be a simple command"},
		{`{ a; }`, "must be a simple command"},
		{`if true; then a; fi`, "must be a simple command"},
		{`a > out`, "must not redirect"},
		{`a < in`, "must not redirect"},
		{`a 2>&1`, "must not redirect"},
		{`a &`, "background"},
		{`! a`, "must not start with the negation operator (!)"},
		{`FOO=1 a`, "must not set variables"},
		{`FOO=1`, "must not set variables"},
		{`a # comment`, "comment"},
		{`# only a comment`, "comment"},
		{`'' a`, "program name"},
		{`"" a`, "program name"},
		{"a \x00b", "NUL"},
		{`a <(b)`, "not valid"},
		{`a=(1) b`, "which a POSIX shell lacks"},
	} {
		got, err := ParseCommand(c.in)
		if err == nil {
			t.Errorf("ParseCommand(%q) = %q, want an error", c.in, got)
			continue
		}
		if !strings.HasPrefix(err.Error(), "command") || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ParseCommand(%q): error %q, want one mentioning %q", c.in, err, c.msg)
		}
	}
}

// TestParseCommandMatchesShell checks the accepted commands against a real POSIX shell's split.
func TestParseCommandMatchesShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal("no sh to compare with: every Debian machine has one (dash)")
	}
	for _, c := range acceptedCommands {
		out, err := exec.Command(sh, "-c", "set -- "+c.in+"\nfor a; do printf '%s\\0' \"$a\"; done").Output()
		if err != nil {
			t.Fatalf("sh with %q: %v", c.in, err)
		}
		shWords := strings.Split(string(out), "\x00")
		shWords = shWords[:len(shWords)-1]
		if got, _ := ParseCommand(c.in); !slices.Equal(got, shWords) {
			t.Errorf("ParseCommand(%q) = %q; sh says %q", c.in, got, shWords)
		}
	}
}

// FuzzCommand: ParseCommand never panics; an accepted command that is not blank gives a
// non-empty list of words with a non-empty program name, free of NUL; and the words, quoted
// back for a POSIX shell, parse to the same words.
func FuzzCommand(f *testing.F) {
	for _, c := range acceptedCommands {
		f.Add(c.in)
	}
	for _, s := range []string{`a "b`, `a 'b`, `$X`, "`x`", `a;b`, `a|b`, `a\`, `\`, "a \\\n", `"a\`, `'`, `"`, `${`, `$(`, `a=(1)`, `a<<EOF`, "\x00", `# x`, `a{b}`, `!`, `\$ \\ \"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := ParseCommand(s)
		if err != nil {
			if words != nil || !strings.HasPrefix(err.Error(), "command") {
				t.Fatalf("ParseCommand(%q) = %q, %v", s, words, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			if words != nil {
				t.Fatalf("blank %q gave words %q", s, words)
			}
			return
		}
		if len(words) == 0 || words[0] == "" {
			t.Fatalf("ParseCommand(%q) accepted it as %q", s, words)
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			if strings.ContainsRune(w, 0) {
				t.Fatalf("ParseCommand(%q): word %q holds a NUL", s, w)
			}
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := ParseCommand(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("ParseCommand(%q) = %q, but quoted back it gives %q, %v", s, words, again, err)
		}
	})
}
