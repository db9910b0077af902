package planner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// selection is what a user picks for a plan: tests of two suites with steps, preconditions,
// a case without steps and one without a suite.
func selection() []Case {
	return []Case{
		{ID: "c1", Title: "Pay with a saved card", Suite: "Checkout", Priority: "critical", Tags: []string{"smoke"},
			Preconditions: "1. User is logged in\n2. The cart has two items",
			Steps: []Step{
				{"Open /checkout", "The saved card is shown"},
				{"Click Pay", "The order confirmation page loads"},
				{"Check the inbox", ""},
			}},
		{ID: "c2", Title: "Apply a coupon", Suite: "Checkout", Priority: "medium",
			Preconditions: "The cart has two items",
			Steps:         []Step{{"Enter the coupon SAVE10", "The total drops by 10%"}}},
		{ID: "a1", Title: "Reset the password", Suite: "Account", Priority: "high",
			Steps: []Step{{"Request a reset e-mail", "An e-mail arrives within a minute"}, {"Follow the link and set a new password", "The user is signed in"}}},
		{ID: "p1", Title: "Change the avatar", Suite: "Profile", Priority: "low"},
		{ID: "n1", Title: "Export the orders to CSV", Priority: "medium",
			Steps: []Step{{"Click Export", "A CSV file downloads with every order"}}},
	}
}

// layouts are files a plan of the Checkout suite must have, per framework and pattern.
var layouts = map[Framework]struct {
	always   []string
	patterns map[Pattern][]string
}{
	Playwright: {
		[]string{"tests/checkout/checkout.spec.ts", "playwright.config.ts", "package.json", "tsconfig.json"},
		map[Pattern][]string{
			PageObject: {"pages/CheckoutPage.ts", "pages/BasePage.ts", "fixtures/pages.ts"},
			Screenplay: {"screenplay/tasks/CheckoutTasks.ts", "screenplay/questions/CheckoutQuestions.ts", "screenplay/Actor.ts", "screenplay/abilities/BrowseTheWeb.ts"},
			Fixture:    {"fixtures/checkout.fixture.ts", "fixtures/index.ts"},
			Fluent:     {"flows/CheckoutFlow.ts", "flows/BaseFlow.ts"},
			DataDriven: {"data/checkout.json", "utils/test-data.ts"},
		},
	},
	Cypress: {
		[]string{"cypress/e2e/checkout/checkout.cy.ts", "cypress.config.ts", "cypress/support/e2e.ts", "cypress/support/commands.ts"},
		map[Pattern][]string{
			PageObject: {"cypress/pages/CheckoutPage.ts", "cypress/pages/BasePage.ts"},
			Screenplay: {"cypress/screenplay/tasks/CheckoutTasks.ts", "cypress/screenplay/questions/CheckoutQuestions.ts", "cypress/screenplay/Actor.ts"},
			Fixture:    {"cypress/fixtures/checkout.json"},
			Fluent:     {"cypress/flows/CheckoutFlow.ts"},
			DataDriven: {"cypress/fixtures/data/checkout.json"},
		},
	},
	Pytest: {
		[]string{"tests/test_checkout.py", "conftest.py", "pytest.ini", "requirements.txt"},
		map[Pattern][]string{
			PageObject: {"pages/checkout_page.py", "pages/base_page.py"},
			Screenplay: {"screenplay/tasks/checkout_tasks.py", "screenplay/questions/checkout_questions.py", "screenplay/actor.py", "screenplay/abilities/browse_the_web.py"},
			Fixture:    {"fixtures/checkout_fixtures.py"},
			Fluent:     {"flows/checkout_flow.py", "flows/base_flow.py"},
			DataDriven: {"data/checkout.json", "utils/data_loader.py"},
		},
	},
	Selenium: {
		[]string{"src/test/java/com/example/tests/CheckoutTest.java", "pom.xml", "src/test/java/com/example/support/DriverFactory.java"},
		map[Pattern][]string{
			PageObject: {"src/test/java/com/example/pages/CheckoutPage.java", "src/test/java/com/example/pages/BasePage.java"},
			Screenplay: {"src/test/java/com/example/screenplay/tasks/CheckoutTasks.java", "src/test/java/com/example/screenplay/Actor.java"},
			Fixture:    {"src/test/java/com/example/fixtures/CheckoutFixture.java"},
			Fluent:     {"src/test/java/com/example/flows/CheckoutFlow.java"},
			DataDriven: {"src/test/resources/data/checkout.csv"},
		},
	},
	WebdriverIO: {
		[]string{"test/specs/checkout.e2e.ts", "wdio.conf.ts", "package.json"},
		map[Pattern][]string{
			PageObject: {"test/pageobjects/checkout.page.ts", "test/pageobjects/base.page.ts"},
			Screenplay: {"test/screenplay/tasks/CheckoutTasks.ts", "test/screenplay/abilities/BrowseTheWeb.ts"},
			Fixture:    {"test/fixtures/checkout.fixture.ts", "test/fixtures/index.ts"},
			Fluent:     {"test/flows/CheckoutFlow.ts"},
			DataDriven: {"test/data/checkout.json", "test/utils/test-data.ts"},
		},
	},
	Jest: {
		[]string{"tests/checkout.test.ts", "jest.config.ts", "jest-puppeteer.config.js"},
		map[Pattern][]string{
			PageObject: {"pages/CheckoutPage.ts", "pages/BasePage.ts"},
			Screenplay: {"screenplay/tasks/CheckoutTasks.ts", "screenplay/questions/CheckoutQuestions.ts"},
			Fixture:    {"fixtures/checkout.fixture.ts", "fixtures/index.ts"},
			Fluent:     {"flows/CheckoutFlow.ts"},
			DataDriven: {"data/checkout.json", "utils/test-data.ts"},
		},
	},
}

func TestGenerateEveryFrameworkAndPattern(t *testing.T) {
	cases := selection()
	for _, fw := range Frameworks {
		for _, p := range Patterns {
			t.Run(string(fw)+"/"+string(p), func(t *testing.T) {
				md, err := Generate(cases, string(fw), string(p))
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				checkPlan(t, md, cases, fw)
				if err := Validate(md, cases); err != nil {
					t.Errorf("Validate refuses the built-in plan: %v", err)
				}

				paths := treePaths(t, md)
				for _, want := range slices.Concat(layouts[fw].always, layouts[fw].patterns[p], []string{"Dockerfile", "entrypoint.sh", ".env.example"}) {
					if !slices.Contains(paths, want) {
						t.Errorf("the tree has no %s:\n%s", want, strings.Join(paths, "\n"))
					}
				}
				// The list under the tree describes exactly the tree's files.
				var listed []string
				for _, l := range strings.Split(sectionOf(t, md, SectionStructure), "\n") {
					if path, ok := strings.CutPrefix(l, "- `"); ok {
						listed = append(listed, path[:strings.Index(path, "`")])
					}
				}
				slices.Sort(paths)
				if !slices.Equal(listed, paths) {
					t.Errorf("the files listed are\n%v\nthe tree has\n%v", listed, paths)
				}
				if !strings.HasPrefix(md, "# Automation Plan: "+stacks[fw].title) || !strings.Contains(md, string(p)+" pattern") {
					t.Errorf("the title line is %q", md[:strings.Index(md, "\n")])
				}
			})
		}
	}
}

// checkPlan checks what every plan of cases must be: the six sections in order, a coverage
// map with one well-formed row per case, and a prompt whose JSON carries every case and its
// steps, with targets in the folder tree.
func checkPlan(t testing.TB, md string, cases []Case, fw Framework) {
	t.Helper()
	if got := headings(md); !slices.Equal(got, Sections) {
		t.Fatalf("level-two headings %q, want %q", got, Sections)
	}
	paths := treePaths(t, md)

	header, rows := tableRows(t, md)
	if !slices.Equal(header, coverageHeader) {
		t.Errorf("coverage header %q", header)
	}
	if len(rows) != len(cases) {
		t.Fatalf("the coverage map has %d rows, want %d", len(rows), len(cases))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if len(r) != len(coverageHeader) {
			t.Fatalf("row %q has %d cells, want %d", r, len(r), len(coverageHeader))
		}
		seen[unescape(r[0])] = true
		target := strings.Trim(r[5], "`")
		target, _, _ = strings.Cut(target, "::")
		target, _, _ = strings.Cut(target, "#")
		if !slices.Contains(paths, target) {
			t.Errorf("target %q is not in the tree", r[5])
		}
	}
	for _, c := range cases {
		if !seen[oneLine(c.ID)] {
			t.Errorf("no coverage row for %q", c.ID)
		}
	}

	doc := promptTests(t, md)
	if doc.Framework != string(fw) || len(doc.Tests) != len(cases) {
		t.Fatalf("the prompt's JSON has framework %q and %d tests", doc.Framework, len(doc.Tests))
	}
	byID := map[string]promptTest{}
	for _, pt := range doc.Tests {
		byID[pt.ID] = pt
		if !slices.Contains(paths, pt.File) {
			t.Errorf("the prompt's file %q is not in the tree", pt.File)
		}
	}
	for _, c := range cases {
		c = jsonRound(t, c)
		pt, ok := byID[strings.TrimSpace(c.ID)]
		if !ok {
			t.Errorf("the prompt's JSON has no test %q", c.ID)
			continue
		}
		steps := c.Steps
		if steps == nil {
			steps = []Step{}
		}
		if pt.Title != c.Title || !reflect.DeepEqual(pt.Steps, steps) || pt.Preconditions != c.Preconditions {
			t.Errorf("the prompt carries %+v for %+v", pt, c)
		}
	}
}

func TestGenerateTargetsAndTestNames(t *testing.T) {
	cases := []Case{
		{ID: "1", Title: "Pay with a saved card", Suite: "Checkout"},
		{ID: "2", Title: "Pay with a saved card!", Suite: "Checkout"},
		{ID: "3", Title: "Class", Suite: "Checkout"},
		{ID: "4", Title: "3-D Secure challenge", Suite: "Checkout"},
		{ID: "5", Title: "日本語", Suite: "Checkout"},
	}
	for fw, want := range map[Framework][]string{
		Pytest: {"tests/test_checkout.py::test_pay_with_a_saved_card", "tests/test_checkout.py::test_pay_with_a_saved_card_2",
			"tests/test_checkout.py::test_class", "tests/test_checkout.py::test_3_d_secure_challenge", "tests/test_checkout.py::test_case"},
		Selenium: {"src/test/java/com/example/tests/CheckoutTest.java#payWithASavedCard", "src/test/java/com/example/tests/CheckoutTest.java#payWithASavedCard2",
			"src/test/java/com/example/tests/CheckoutTest.java#classTest", "src/test/java/com/example/tests/CheckoutTest.java#test3DSecureChallenge",
			"src/test/java/com/example/tests/CheckoutTest.java#test"},
		Playwright: {"tests/checkout/checkout.spec.ts", "tests/checkout/checkout.spec.ts", "tests/checkout/checkout.spec.ts", "tests/checkout/checkout.spec.ts", "tests/checkout/checkout.spec.ts"},
	} {
		p, err := newPlan(cases, string(fw), "Page Object")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, pt := range p.tests() {
			got[pt.c.ID] = pt.target
		}
		for i, w := range want {
			if id := cases[i].ID; got[id] != w {
				t.Errorf("%s: target of %q = %q, want %q", fw, cases[i].Title, got[id], w)
			}
		}
	}
	// The JavaScript runners name a test by its title, told apart when two are the same.
	p, _ := newPlan([]Case{{ID: "1", Title: "Same"}, {ID: "2", Title: "Same"}, {ID: "3", Title: " "}}, "jest", "Fluent")
	var names []string
	for _, pt := range p.tests() {
		names = append(names, pt.testName)
	}
	if want := []string{"untitled", "Same", "Same (2)"}; !slices.Equal(names, want) {
		t.Errorf("test names %q, want %q", names, want)
	}
}

func TestGenerateSuiteNames(t *testing.T) {
	got := suiteNames([]string{"Checkout & Payments", "checkout payments", "日本語", "2FA login", "A very long suite name with many words"})
	var kebab []string
	for _, n := range got {
		kebab = append(kebab, n.kebab)
	}
	want := []string{"checkout-payments", "checkout-payments-2", "suite", "suite-2fa-login", "a-very-long-suite-name"}
	if !slices.Equal(kebab, want) {
		t.Errorf("suite names %q, want %q", kebab, want)
	}
	if got[3].pascal != "Suite2faLogin" || got[3].snake != "suite_2fa_login" {
		t.Errorf("names %+v", got[3])
	}
}

func TestGenerateRefuses(t *testing.T) {
	ok := selection()
	many := make([]Case, MaxTests+1)
	for i := range many {
		many[i] = Case{ID: fmt.Sprint("t", i), Title: "Test"}
	}
	for name, tc := range map[string]struct {
		cases              []Case
		framework, pattern string
		kind               error
		message            string
	}{
		"unknown framework":    {ok, "puppeteer", "Page Object", ErrUnknownFramework, "framework must be one of playwright, cypress, pytest, selenium, webdriverio, jest"},
		"framework in capital": {ok, "Playwright", "Page Object", ErrUnknownFramework, ""},
		"unknown pattern":      {ok, "playwright", "Page Objects", ErrUnknownPattern, "designPattern must be one of Page Object, Screenplay, Fixture, Fluent, Data-Driven"},
		"pattern in lowercase": {ok, "playwright", "data-driven", ErrUnknownPattern, ""},
		"no tests":             {nil, "playwright", "Fluent", ErrNoTests, "select at least one test case"},
		"31 tests":             {many, "playwright", "Fluent", ErrTooManyTests, "at most 30 test cases can be planned at once, not 31"},
		"no id":                {[]Case{{ID: " ", Title: "x"}}, "pytest", "Fixture", ErrBadCase, "test case 1 has no id"},
		"same id twice":        {[]Case{{ID: "a", Title: "x"}, {ID: " a", Title: "y"}}, "pytest", "Fixture", ErrBadCase, "test case a is selected twice"},
	} {
		md, err := Generate(tc.cases, tc.framework, tc.pattern)
		var ie *InputError
		if !errors.Is(err, tc.kind) || !errors.As(err, &ie) || md != "" {
			t.Errorf("%s: Generate = %d bytes, %v; want %v as an *InputError", name, len(md), err, tc.kind)
			continue
		}
		if tc.message != "" && err.Error() != tc.message {
			t.Errorf("%s: message %q, want %q", name, err.Error(), tc.message)
		}
		if _, _, err := ModelInput(tc.cases, tc.framework, tc.pattern); !errors.Is(err, tc.kind) {
			t.Errorf("%s: ModelInput error %v, want %v", name, err, tc.kind)
		}
	}
}

// thirty is a plan of MaxTests cases over six suites, each with eight steps.
func thirty() []Case {
	suites := []string{"Checkout", "Login", "Search", "Profile", "Admin users", "Reports export"}
	var cases []Case
	for i := range MaxTests {
		c := Case{
			ID: fmt.Sprintf("tc-%02d", i+1), Title: fmt.Sprintf("Scenario %d of %s", i+1, suites[i%6]),
			Suite: suites[i%6], Priority: []string{"critical", "high", "medium", "low", ""}[i%5],
			Tags: []string{"regression", suites[i%6]}, Preconditions: "User is logged in as an admin\nThe catalogue has 3 products",
		}
		for s := range 8 {
			c.Steps = append(c.Steps, Step{
				Action:   fmt.Sprintf("Step %d: open the page, fill the form with the user's data and submit", s+1),
				Expected: fmt.Sprintf("Result %d: a notification appears and the record is saved", s+1),
			})
		}
		cases = append(cases, c)
	}
	return cases
}

func TestGenerateThirtyTests(t *testing.T) {
	cases := thirty()
	md, err := Generate(cases, "playwright", "Page Object")
	if err != nil {
		t.Fatalf("Generate of %d tests: %v", len(cases), err)
	}
	checkPlan(t, md, cases, Playwright)
	if err := Validate(md, cases); err != nil {
		t.Error(err)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	for _, fw := range Frameworks {
		cases := thirty()
		want, err := Generate(cases, string(fw), "Screenplay")
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, uint64(len(fw))))
		for range 5 {
			rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
			if got, _ := Generate(cases, string(fw), "Screenplay"); got != want {
				t.Fatalf("%s: the same cases in another order give another plan", fw)
			}
		}
	}
}

func TestGenerateOrdersByRisk(t *testing.T) {
	p, err := newPlan(selection(), "pytest", "Page Object")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.suites {
		got = append(got, s.name+" "+string(s.level))
	}
	want := []string{"Checkout CRITICAL", "Account HIGH", "No suite HIGH", "Profile LOW"}
	if !slices.Equal(got, want) {
		t.Errorf("suites %q, want %q", got, want)
	}
}

func TestGenerateNotesFromSteps(t *testing.T) {
	md, err := Generate(selection(), "cypress", "Fixture")
	if err != nil {
		t.Fatal(err)
	}
	notes := sectionOf(t, md, SectionNotes)
	for _, want := range []string{
		"- **c1** Pay with a saved card: steps 1 and 2: wait for the navigation to finish",
		"- **a1** Reset the password: step 1: wait for the asynchronous result itself",
		"`cy.intercept()`",
		"- **c1** Pay with a saved card: user accounts, payment details, records and e-mail (steps 1, 2 and 3 and the preconditions).",
		"- **n1** Export the orders to CSV: records and files (step 1).",
		"- `cartTwoItems`: The cart has two items (used by **c1** and **c2**).",
		"- `userLoggedIn`: User is logged in (used by **c1**).",
		"- Payments (**c1** and **c2**): use the payment provider's test mode",
		"- Data (**n1**): work on data the test created itself",
		"- **c1** Pay with a saved card has no expected result in step 3",
		"- **p1** Change the avatar has no steps: write them before automating it.",
		"`cy.session`",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("the implementation notes do not say %q:\n%s", want, notes)
		}
	}
	_, rows := tableRows(t, md)
	if got := rows[0][6]; got != "3 steps; wait for navigation (steps 1 and 2); data: user accounts, payment details, records, e-mail; fixtures: `userLoggedIn`, `cartTwoItems`; no expected result in step 3" {
		t.Errorf("the notes cell of c1 is %q", got)
	}
	prereq := sectionOf(t, md, SectionPrerequisites)
	for _, want := range []string{"npm install --save-dev cypress typescript", "`BASE_URL`", "`TEST_USER_EMAIL`", "test mode", "exec npx cypress run --spec \"$1\""} {
		if !strings.Contains(prereq, want) {
			t.Errorf("the prerequisites do not say %q:\n%s", want, prereq)
		}
	}
	summary := sectionOf(t, md, SectionSummary)
	for _, want := range []string{"5 manual tests from 4 suites with Cypress in TypeScript", "By risk: 1 CRITICAL, 3 HIGH, 0 MEDIUM and 1 LOW.", "1. **Checkout**: CRITICAL, 2 tests, in `cypress/e2e/checkout/checkout.cy.ts`"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary does not say %q:\n%s", want, summary)
		}
	}
}

func TestGenerateKeepsHostileTextInert(t *testing.T) {
	for line, want := range map[string]bool{"a <b>": true, `a \<b\>`: false, "`<x>` and ``a`<b>``": false, "`x` <i>": true} {
		if rawHTML(line) != want {
			t.Fatalf("rawHTML(%q) = %v", line, !want)
		}
	}
	cases := []Case{{
		ID:            "x|1",
		Title:         "Title | with pipes\n## Injected heading\n```\n<script>alert(1)</script> *bold* [link](http://x)",
		Suite:         "Suite | A\n# H1 <img src=x onerror=alert(2)>",
		Tags:          []string{"a|b", "```"},
		Preconditions: "- item\n## Precondition heading |",
		Steps:         []Step{{Action: "````\n## Step heading\n| a | b |", Expected: "\\|`` end"}},
	}}
	for _, fw := range Frameworks {
		md, err := Generate(cases, string(fw), "Data-Driven")
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, md, cases, fw)
		if err := Validate(md, cases); err != nil {
			t.Errorf("%s: %v", fw, err)
		}
		for _, l := range readLines(md) {
			if !l.inFence && rawHTML(l.text) {
				t.Errorf("%s: raw HTML from a case reached the document: %q", fw, l.text)
			}
		}
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "# Automation Plan: ") {
				t.Errorf("%s: a line starts a heading: %q", fw, l)
			}
		}
	}
}

// rawHTML reports whether a line of Markdown has a < that is neither escaped nor in a code
// span: where HTML could start.
func rawHTML(line string) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '`':
			n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
			end := strings.Index(line[i+n:], line[i:i+n])
			if end < 0 {
				i += n - 1
				continue
			}
			i += n + end + n - 1
		case '<':
			return true
		}
	}
	return false
}
