package planner

import (
	"slices"
	"strconv"
	"strings"
)

// The parts of a score and the thresholds of the levels; the package comment explains them.
const (
	areaExtra       = 10 // each area beyond the strongest
	areaCap         = 45
	releaseTagScore = 10
	failureScore    = 10 // each recent failure of the test
	failureCap      = 30
	suiteFailure    = 5 // each recent failure counted against a suite
	suiteFailureCap = 20

	criticalFrom = 70
	highFrom     = 40
	mediumFrom   = 15
)

var priorityScore = map[string]int{"critical": 45, "high": 30, "medium": 15, "low": 0}

// defaultPriority is what a case without a known priority counts as.
const defaultPriority = "medium"

// levelOf is the level of a score.
func levelOf(score int) Level {
	switch {
	case score >= criticalFrom:
		return Critical
	case score >= highFrom:
		return High
	case score >= mediumFrom:
		return Medium
	}
	return Low
}

// area is a risky kind of functionality and the words that show a test touches it.
type area struct {
	name   string
	weight int
	terms  []term
}

// term is one risky word as rationales name it, and the forms it is found in: words
// separated by spaces, the last of which also matches with -s, -es, -d, -ed and -ing.
type term struct {
	name  string
	forms []string
}

var areas = []area{
	{name: "payments", weight: 30, terms: []term{
		{"payment", []string{"payment", "pay", "paid"}},
		{"checkout", []string{"checkout", "check out"}},
		{"billing", []string{"billing", "bill"}},
		{"invoice", []string{"invoice", "invoicing"}},
		{"refund", []string{"refund"}},
		{"subscription", []string{"subscription", "subscribe", "subscribing"}},
		{"purchase", []string{"purchase", "purchasing"}},
		{"cart", []string{"cart", "basket"}},
		{"price", []string{"price", "pricing"}},
		{"transaction", []string{"transaction"}},
		{"card", []string{"credit card", "debit card", "card number", "cvv", "cvc"}},
		{"coupon", []string{"coupon", "voucher"}},
		{"wallet", []string{"wallet"}},
		{"charge", []string{"charge", "charging"}},
	}},
	{name: "security", weight: 30, terms: []term{
		{"login", []string{"login", "log in", "logging in", "logged in", "logon", "sign in", "signin", "signing in", "signed in"}},
		{"logout", []string{"logout", "log out", "logged out", "sign out", "signout", "signed out"}},
		{"auth", []string{"auth", "authentication", "authenticate", "authorization", "authorisation", "authorize", "authorise", "oauth", "saml", "sso", "single sign on"}},
		{"password", []string{"password", "passwd", "passphrase"}},
		{"permission", []string{"permission", "privilege", "access control", "rbac"}},
		{"role", []string{"role"}},
		{"security", []string{"security", "csrf", "xss", "sql injection"}},
		{"session", []string{"session"}},
		{"token", []string{"token", "api key"}},
		{"MFA", []string{"mfa", "2fa", "two factor", "otp", "totp", "one time password"}},
		{"lockout", []string{"lockout", "locked out", "captcha"}},
	}},
	{name: "data", weight: 25, terms: []term{
		{"delete", []string{"delete", "deleting", "deletion", "purge", "purging", "erase", "erasing", "wipe", "wiping"}},
		{"data loss", []string{"data loss", "lose data", "lost data", "data corruption", "corrupt"}},
		{"export", []string{"export"}},
		{"import", []string{"import"}},
		{"backup", []string{"backup", "back up"}},
		{"restore", []string{"restore", "restoring"}},
		{"migration", []string{"migration", "migrate", "migrating"}},
		{"PII", []string{"pii", "personal data", "personal information", "ssn"}},
		{"GDPR", []string{"gdpr"}},
		{"privacy", []string{"privacy"}},
	}},
}

// areaTerms are the terms of every area, and areaOf the area of each.
var areaTerms, areaOf, areaMatcher = func() ([]term, []int, *matcher) {
	var terms []term
	var of []int
	for i, a := range areas {
		for _, t := range a.terms {
			terms = append(terms, t)
			of = append(of, i)
		}
	}
	return terms, of, newMatcher(terms)
}()

// releaseTags are tag words saying a test gates a release.
var releaseTags = []string{"smoke", "sanity", "critical", "p0", "blocker"}

// Risk is how risky a test case is, and why.
type Risk struct {
	Level    Level
	Score    int
	Priority string   // the priority the score counted ("medium" for none)
	Areas    []string // the risky areas the case touches, the strongest first
	Terms    []string // the risky words found, as rationales name them, sorted
	Failures int      // failures of the test in the history
	Reasons  []string // each part of the score, in order: "priority critical +45"…

	headTerms []string // the Terms found in the title or the tags
}

// Assess scores one case against the project's history (see the package comment).
func Assess(c Case, h History) Risk {
	want := key(c.Title)
	failures := 0
	for title, n := range h.Tests {
		if key(title) == want && n > 0 {
			failures += n
		}
	}
	return assess(c, failures)
}

// assess scores c with failures recent failures of its own.
func assess(c Case, failures int) Risk {
	r := Risk{Priority: strings.ToLower(strings.TrimSpace(c.Priority)), Failures: failures}
	p, ok := priorityScore[r.Priority]
	if !ok {
		r.Priority = defaultPriority
		p = priorityScore[defaultPriority]
	}
	r.Score = p
	r.Reasons = append(r.Reasons, "priority "+r.Priority+" +"+strconv.Itoa(p))

	// Areas: fully from the title and tags, half from the rest.
	head := words(c.Title)
	var tagWords []string
	for _, t := range c.Tags {
		ws := words(t)
		head = append(append(head, "."), ws...) // "." keeps words of two tags apart
		tagWords = append(tagWords, ws...)
	}
	var body []string
	body = append(body, words(c.Preconditions)...)
	for _, s := range c.Steps {
		body = append(append(body, "."), words(s.Action)...)
		body = append(append(body, "."), words(s.Expected)...)
	}
	type hit struct {
		name  string
		score int
	}
	inHead, inBody := areaMatcher.find(head), areaMatcher.find(body)
	full := make([]bool, len(areas))
	half := make([]bool, len(areas))
	terms := map[string]bool{}
	for i, t := range areaTerms {
		if inHead[i] || inBody[i] {
			terms[t.name] = true
		}
		if inHead[i] {
			r.headTerms = append(r.headTerms, t.name)
		}
		full[areaOf[i]] = full[areaOf[i]] || inHead[i]
		half[areaOf[i]] = half[areaOf[i]] || inBody[i]
	}
	var hits []hit
	for i, a := range areas {
		switch {
		case full[i]:
			hits = append(hits, hit{a.name, a.weight})
		case half[i]:
			hits = append(hits, hit{a.name, a.weight / 2})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return y.score - x.score })
	if len(hits) > 0 {
		s := min(hits[0].score+areaExtra*(len(hits)-1), areaCap)
		r.Score += s
		for _, h := range hits {
			r.Areas = append(r.Areas, h.name)
		}
		r.Reasons = append(r.Reasons, "touches "+andList(r.Areas)+" +"+strconv.Itoa(s))
	}
	for t := range terms {
		r.Terms = append(r.Terms, t)
	}
	slices.Sort(r.Terms)

	for _, w := range tagWords {
		if slices.Contains(releaseTags, w) {
			r.Score += releaseTagScore
			r.Reasons = append(r.Reasons, "release tag "+w+" +"+strconv.Itoa(releaseTagScore))
			break
		}
	}
	if failures > 0 {
		s := min(failures*failureScore, failureCap)
		r.Score += s
		r.Reasons = append(r.Reasons, plural(failures, "recent failure", "recent failures")+" +"+strconv.Itoa(s))
	}
	r.Level = levelOf(r.Score)
	return r
}

// endings are what a term's last word may end with beyond its form.
var endings = []string{"", "s", "es", "d", "ed", "ing"}

// matcher finds which of a list of terms occur in a text, in one pass over its words.
type matcher struct {
	size   int
	single map[string][]int       // a one-word form with an ending → the terms it shows
	multi  map[string][]multiForm // the first word of a longer form → the forms
}

type multiForm struct {
	words []string
	term  int
}

func newMatcher(terms []term) *matcher {
	m := &matcher{size: len(terms), single: map[string][]int{}, multi: map[string][]multiForm{}}
	for i, t := range terms {
		for _, f := range t.forms {
			ws := strings.Fields(f)
			if len(ws) > 1 {
				m.multi[ws[0]] = append(m.multi[ws[0]], multiForm{ws, i})
				continue
			}
			for _, e := range endings {
				if w := ws[0] + e; !slices.Contains(m.single[w], i) {
					m.single[w] = append(m.single[w], i)
				}
			}
		}
	}
	return m
}

// find reports, for each term by its index, whether it occurs in ws.
func (m *matcher) find(ws []string) []bool {
	found := make([]bool, m.size)
	for i, w := range ws {
		for _, t := range m.single[w] {
			found[t] = true
		}
		for _, f := range m.multi[w] {
			if !found[f.term] && at(f.words, ws[i:]) {
				found[f.term] = true
			}
		}
	}
	return found
}

// at reports whether ws starts with the words of form, the last one perhaps with an ending.
func at(form, ws []string) bool {
	n := len(form)
	if len(ws) < n {
		return false
	}
	for j := 0; j < n-1; j++ {
		if ws[j] != form[j] {
			return false
		}
	}
	return inflected(ws[n-1], form[n-1])
}

// inflected reports whether w is base or base with a plural, past or -ing ending.
func inflected(w, base string) bool {
	rest, ok := strings.CutPrefix(w, base)
	if !ok {
		return false
	}
	switch rest {
	case "", "s", "es", "d", "ed", "ing":
		return true
	}
	return false
}
