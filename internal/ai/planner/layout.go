package planner

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Framework is a test framework a plan is written for.
type Framework string

const (
	Playwright  Framework = "playwright"
	Cypress     Framework = "cypress"
	Pytest      Framework = "pytest"
	Selenium    Framework = "selenium"
	WebdriverIO Framework = "webdriverio"
	Jest        Framework = "jest"
)

// Frameworks lists every framework, in the order the API reference gives them.
var Frameworks = []Framework{Playwright, Cypress, Pytest, Selenium, WebdriverIO, Jest}

// Pattern is the design pattern a plan organises the test code with.
type Pattern string

const (
	PageObject Pattern = "Page Object"
	Screenplay Pattern = "Screenplay"
	Fixture    Pattern = "Fixture"
	Fluent     Pattern = "Fluent"
	DataDriven Pattern = "Data-Driven"
)

// Patterns lists every design pattern, in the order the API reference gives them.
var Patterns = []Pattern{PageObject, Screenplay, Fixture, Fluent, DataDriven}

type lang int

const (
	typeScript lang = iota
	python
	java
)

// file is one file of a plan's folder tree and what it is for. The purpose of a suite's own
// file names the suite where suiteMark is.
type file struct {
	path    string
	purpose string
}

const suiteMark = "{suite}"

// plain writes user text on one line, bounded, for a context where Markdown means nothing
// (a fenced block, JSON).
func plain(s string) string { return clip(oneLine(s), 120) }

// inMarkdown writes user text into Markdown, bounded.
func inMarkdown(s string) string { return inline(s, 120) }

// stack is what a plan needs to know of a framework: its language and tools, where its files
// go and how its tests wait, get data and set up state.
type stack struct {
	title    string // "Playwright Test"
	language string // "TypeScript"
	lang     lang
	runtime  string // what to install first
	install  []string
	runAll   string // runs every test
	runOne   string // runs one spec; %s is its path
	image    string // a base image for the suite's container
	root     string // the folder support code goes under
	fixed    []file // files every plan with this framework has
	spec     func(n names) string
	waits    string // how to wait
	fixtures string // how preconditions become fixtures
	data     string // where test data lives
	patterns map[Pattern]string
}

// common are the files every plan has besides its framework's own.
var common = []file{
	{".env.example", "the variables the tests read (BASE_URL, test accounts); copy to .env locally, never commit .env"},
	{"Dockerfile", "the suite's image: runtime, dependencies and browsers, WORKDIR /app, entrypoint.sh as the entrypoint"},
	{"entrypoint.sh", "runs every test for `all` (or no argument) and the given folder or spec otherwise; JUnit XML goes to reports/"},
}

const javaRoot = "src/test/java/com/example/"

var stacks = map[Framework]*stack{
	Playwright: {
		title: "Playwright Test", language: "TypeScript", lang: typeScript,
		runtime: "Node.js 20 LTS or newer and npm",
		install: []string{"npm install --save-dev @playwright/test dotenv", "npx playwright install --with-deps chromium"},
		runAll:  "npx playwright test", runOne: "npx playwright test %s",
		image: "the official Playwright image (mcr.microsoft.com/playwright) whose tag matches the installed @playwright/test",
		fixed: []file{
			{"package.json", "dev dependencies (@playwright/test, dotenv) and the test script"},
			{"tsconfig.json", "strict TypeScript for the tests"},
			{"playwright.config.ts", "baseURL from BASE_URL, retries and one worker on CI, trace on first retry, list, HTML and JUnit (reports/junit.xml) reporters"},
		},
		spec:     func(n names) string { return "tests/" + n.kebab + "/" + n.kebab + ".spec.ts" },
		waits:    "rely on Playwright's auto-waiting locators and web-first assertions (`await expect(page).toHaveURL(...)`, `await expect(locator).toBeVisible()`), and on `page.waitForResponse(...)` where a step waits for the server; never `page.waitForTimeout`",
		fixtures: "`test.extend` fixtures named after the precondition; a logged-in state is saved once with `storageState` by a setup project and reused",
		data:     "typed builders under `fixtures/` that create the data through the application's API (the `request` fixture) before the test and remove it after",
		patterns: map[Pattern]string{
			PageObject: "`fixtures/pages.ts` hands every test its page objects through `test.extend`, so specs never construct them",
			Fixture:    "`fixtures/index.ts` merges the suites' fixtures with `mergeTests`; specs import `test` and `expect` from it",
			Screenplay: "the actor's ability wraps Playwright's `page`; a `test.extend` fixture gives each test an actor",
			Fluent:     "flow methods return `this` (or the next flow) and are awaited as one chain",
			DataDriven: "loop over the data file's rows outside `test()` to declare one test per row, with the row's name in the title",
		},
	},
	Cypress: {
		title: "Cypress", language: "TypeScript", lang: typeScript,
		runtime: "Node.js 20 LTS or newer and npm",
		install: []string{"npm install --save-dev cypress typescript"},
		runAll:  "npx cypress run", runOne: "npx cypress run --spec %s",
		image: "the cypress/included image whose tag matches the installed cypress",
		root:  "cypress/",
		fixed: []file{
			{"package.json", "dev dependencies (cypress, typescript) and the test script"},
			{"tsconfig.json", "TypeScript with the cypress types"},
			{"cypress.config.ts", "baseUrl from BASE_URL, specPattern, retries in run mode, the JUnit reporter writing to reports/"},
			{"cypress/support/e2e.ts", "global hooks; imports the custom commands"},
			{"cypress/support/commands.ts", "custom commands: login through `cy.session`, data set up through `cy.request`"},
		},
		spec:     func(n names) string { return "cypress/e2e/" + n.kebab + "/" + n.kebab + ".cy.ts" },
		waits:    "`cy.intercept()` the request a step waits for and `cy.wait('@alias')` on it, and assert the URL with `cy.location('pathname').should(...)`; Cypress retries queries and assertions, so never `cy.wait(milliseconds)`",
		fixtures: "`beforeEach` hooks calling custom commands; logins go through `cy.session` so they are made once and restored",
		data:     "JSON files under `cypress/fixtures/` loaded with `cy.fixture`, and records created with `cy.request` against the API in `beforeEach`",
		patterns: map[Pattern]string{
			PageObject: "page objects wrap `cy` chains and return them, so specs keep Cypress's retrying assertions",
			Fixture:    "Cypress's own fixtures are JSON data files; state set-up lives in custom commands in `cypress/support/commands.ts`",
			Screenplay: "tasks and questions wrap `cy` commands; the actor is a plain object the spec creates in `beforeEach`",
			Fluent:     "flow methods enqueue `cy` commands and return `this`; never mix `await` with them",
			DataDriven: "load the rows with `cy.fixture` in `before` (or import the JSON) and declare one `it` per row",
		},
	},
	Pytest: {
		title: "pytest and Playwright for Python", language: "Python", lang: python,
		runtime: "Python 3.11 or newer",
		install: []string{"python -m pip install -r requirements.txt", "python -m playwright install --with-deps chromium"},
		runAll:  "pytest", runOne: "pytest %s",
		image: "the official Playwright for Python image (mcr.microsoft.com/playwright/python) matching the installed playwright",
		fixed: []file{
			{"requirements.txt", "pytest, pytest-playwright, python-dotenv, pinned"},
			{"pytest.ini", "testpaths = tests, markers per suite and risk, `--base-url` from BASE_URL, `--junitxml=reports/junit.xml`"},
			{"conftest.py", "shared fixtures: browser context arguments, the base URL, test accounts from the environment"},
		},
		spec:     func(n names) string { return "tests/test_" + n.snake + ".py" },
		waits:    "use Playwright's auto-waiting locators and `expect(page).to_have_url(...)`, `expect(locator).to_be_visible()`, and `with page.expect_response(...)` where a step waits for the server; never `time.sleep`",
		fixtures: "pytest fixtures named after the precondition, function-scoped unless the state is read-only, with clean-up after `yield`",
		data:     "factory fixtures that create the data through the API before the test and delete it after `yield`",
		patterns: map[Pattern]string{
			PageObject: "page objects take the `page` fixture in their constructor; a fixture per page object keeps tests short",
			Fixture:    "the suites' fixture modules are registered in the root `conftest.py` with `pytest_plugins`",
			Screenplay: "the actor is a fixture holding the `BrowseTheWeb` ability; tasks and questions are small classes with `perform_as` and `answered_by`",
			Fluent:     "flow methods return `self` (or the next flow), so a test reads as one chained sentence",
			DataDriven: "`@pytest.mark.parametrize` over the rows the data loader reads, with `ids=` from each row's name",
		},
	},
	Selenium: {
		title: "Selenium WebDriver and JUnit 5", language: "Java", lang: java,
		runtime: "JDK 21 and Maven 3.9 or newer; Chrome (Selenium Manager fetches the matching driver)",
		install: []string{"mvn -q -DskipTests dependency:go-offline"},
		runAll:  "mvn -q test", runOne: "mvn -q test -Dtest=%s",
		image: "a Maven image with JDK 21 (maven:3-eclipse-temurin-21) with Chrome installed",
		root:  javaRoot,
		fixed: []file{
			{"pom.xml", "selenium-java, junit-jupiter, Surefire writing its JUnit XML to reports/"},
			{javaRoot + "support/DriverFactory.java", "creates a headless Chrome (`--headless=new`) sized for CI"},
			{javaRoot + "support/BaseTest.java", "opens the driver before each test and quits it after; reads BASE_URL"},
		},
		spec:     func(n names) string { return javaRoot + "tests/" + n.pascal + "Test.java" },
		waits:    "`new WebDriverWait(driver, Duration.ofSeconds(10))` with `ExpectedConditions` (`urlContains`, `visibilityOfElementLocated`, `elementToBeClickable`); no implicit waits mixed with explicit ones and never `Thread.sleep`",
		fixtures: "`@BeforeEach` methods in the test class, or a JUnit 5 extension shared by classes, named after the precondition",
		data:     "builders in `support/` that create the data through the application's API before the test (`java.net.http.HttpClient`) and remove it in `@AfterEach`",
		patterns: map[Pattern]string{
			PageObject: "page objects take the `WebDriver` in their constructor, find elements with `By` locators kept as private fields, and wait inside their methods",
			Fixture:    "the suites' fixtures are JUnit 5 extensions (`BeforeEachCallback`, `ParameterResolver`) the test classes register with `@ExtendWith`",
			Screenplay: "the actor holds the `BrowseTheWeb` ability (the `WebDriver`); tasks implement `performAs(Actor)` and questions `answeredBy(Actor)`",
			Fluent:     "flow methods return `this` (or the next flow), so a test reads as one chained statement",
			DataDriven: "`@ParameterizedTest` with `@CsvFileSource(resources = \"/data/<suite>.csv\", useHeadersInDisplayName = true)`",
		},
	},
	WebdriverIO: {
		title: "WebdriverIO and Mocha", language: "TypeScript", lang: typeScript,
		runtime: "Node.js 20 LTS or newer and npm; Chrome",
		install: []string{"npm install --save-dev @wdio/cli @wdio/local-runner @wdio/mocha-framework @wdio/spec-reporter @wdio/junit-reporter typescript"},
		runAll:  "npx wdio run wdio.conf.ts", runOne: "npx wdio run wdio.conf.ts --spec %s",
		image: "a Node.js 20 image with Chrome installed",
		root:  "test/",
		fixed: []file{
			{"package.json", "dev dependencies (@wdio/cli and its runner, framework and reporters) and the test script"},
			{"tsconfig.json", "TypeScript with the WebdriverIO and Mocha types"},
			{"wdio.conf.ts", "baseUrl from BASE_URL, headless Chrome, Mocha, spec and JUnit (reports/) reporters"},
		},
		spec:     func(n names) string { return "test/specs/" + n.kebab + ".e2e.ts" },
		waits:    "`await expect(browser).toHaveUrl(...)`, `await $(selector).waitForDisplayed()` and `browser.waitUntil(...)` for server-side state; WebdriverIO's expect retries, so never `browser.pause`",
		fixtures: "Mocha `beforeEach` hooks calling helpers named after the precondition",
		data:     "JSON files or builders that create the data through the API in `before` hooks and remove it in `after`",
		patterns: map[Pattern]string{
			PageObject: "page objects extend `test/pageobjects/base.page.ts` and expose elements as getters (`get payButton() { return $('...') }`)",
			Fixture:    "the suites' fixtures are helpers with set-up and clean-up functions, exported together from `test/fixtures/index.ts`",
			Screenplay: "the actor's ability wraps the global `browser`; tasks and questions are small classes the specs compose",
			Fluent:     "flow methods are async and return `this`, awaited once per chain",
			DataDriven: "loop over the data file's rows to declare one `it` per row",
		},
	},
	Jest: {
		title: "Jest and Puppeteer", language: "TypeScript", lang: typeScript,
		runtime: "Node.js 20 LTS or newer and npm",
		install: []string{"npm install --save-dev jest jest-puppeteer puppeteer ts-jest typescript @types/jest jest-junit"},
		runAll:  "npx jest", runOne: "npx jest %s",
		image: "a Node.js 20 image with the libraries Chrome needs (Puppeteer downloads Chrome itself)",
		fixed: []file{
			{"package.json", "dev dependencies (jest, jest-puppeteer, puppeteer, ts-jest, jest-junit) and the test script"},
			{"tsconfig.json", "TypeScript with the Jest and Puppeteer types"},
			{"jest.config.ts", "preset jest-puppeteer with ts-jest, testMatch tests/**/*.test.ts, a long testTimeout, the jest-junit reporter writing to reports/"},
			{"jest-puppeteer.config.js", "headless Chrome launch options"},
		},
		spec:     func(n names) string { return "tests/" + n.kebab + ".test.ts" },
		waits:    "`await Promise.all([page.waitForNavigation(), page.click(selector)])` for steps that navigate, `page.waitForSelector(...)` and `page.waitForResponse(...)` for asynchronous results; never fixed delays",
		fixtures: "`beforeEach` and `beforeAll` hooks calling helpers named after the precondition",
		data:     "builders that create the data through the API in `beforeEach` and remove it in `afterEach`",
		patterns: map[Pattern]string{
			PageObject: "page objects take Puppeteer's `page` (the global one jest-puppeteer provides) in their constructor",
			Fixture:    "the suites' fixtures are set-up and clean-up helpers, exported together from `fixtures/index.ts`",
			Screenplay: "the actor's ability wraps Puppeteer's `page`; tasks and questions are small classes the tests compose",
			Fluent:     "flow methods are async and return `this`, awaited once per chain",
			DataDriven: "`test.each(rows)` over the data file's rows, with the row's name in the title",
		},
	},
}

// names are the forms a suite's name takes in file and class names.
type names struct {
	words                []string
	kebab, snake, pascal string
}

func newNames(ws []string) names {
	pascal := make([]string, len(ws))
	for i, w := range ws {
		pascal[i] = capitalize(w)
	}
	return names{words: ws, kebab: strings.Join(ws, "-"), snake: strings.Join(ws, "_"), pascal: strings.Join(pascal, "")}
}

// maxNameWords bounds the words of a suite's name used in its file names.
const maxNameWords = 5

// suiteNames gives every suite, in order, names of its own: the ASCII words of its name (the
// first not a digit, so it can start a class or module name), "suite" when there are none,
// and a number when two suites would share them.
func suiteNames(suites []string) []names {
	out := make([]names, len(suites))
	taken := map[string]bool{}
	for i, s := range suites {
		ws := asciiWords(s)
		if len(ws) > maxNameWords {
			ws = ws[:maxNameWords]
		}
		if len(ws) == 0 || ws[0][0] >= '0' && ws[0][0] <= '9' {
			ws = append([]string{"suite"}, ws...)
		}
		n := newNames(ws)
		for k := 2; taken[n.kebab]; k++ {
			n = newNames(append(slices.Clone(ws), strconv.Itoa(k)))
		}
		taken[n.kebab] = true
		out[i] = n
	}
	return out
}

// codeFile names a code file in dir (under the framework's root): base (a suite's words, or
// none) and suffix in the language's convention: CheckoutPage.ts, checkout_page.py,
// CheckoutPage.java; dotted, checkout.page.ts, when dot is set.
func (st *stack) codeFile(dir string, base []string, suffix string, dot bool) string {
	n := newNames(base)
	var name string
	switch {
	case st.lang == python:
		name = strings.Trim(n.snake+"_"+suffix, "_") + ".py"
	case st.lang == java:
		name = n.pascal + newNames(strings.Fields(suffix)).pascal + ".java"
	case dot:
		name = strings.Trim(n.kebab+"."+suffix, ".") + ".ts"
	default:
		name = n.pascal + newNames(strings.Fields(suffix)).pascal + ".ts"
	}
	return st.root + dir + "/" + name
}

// dataFile is where a suite's rows live for the Data-Driven pattern.
func (st *stack) dataFile(n names, fw Framework) string {
	switch {
	case fw == Cypress:
		return "cypress/fixtures/data/" + n.kebab + ".json"
	case st.lang == java:
		return "src/test/resources/data/" + n.kebab + ".csv"
	case st.lang == python:
		return "data/" + n.snake + ".json"
	}
	return st.root + "data/" + n.kebab + ".json"
}

// patternFiles are the files a design pattern adds: once per plan, and once per suite.
func patternFiles(fw Framework, st *stack, p Pattern, n names) (shared, own []file) {
	const label = "the " + suiteMark + " suite"
	switch p {
	case PageObject:
		dir, dot := "pages", false
		if fw == WebdriverIO {
			dir, dot = "pageobjects", true
		}
		shared = []file{{st.codeFile(dir, []string{"base"}, "page", dot), "what every page object shares: navigation relative to the base URL, waiting for the page to be ready"}}
		if fw == Playwright {
			shared = append(shared, file{"fixtures/pages.ts", "a `test.extend` fixture handing each test its page objects"})
		}
		own = []file{{st.codeFile(dir, n.words, "page", dot), "the page object of " + label + ": its locators and the actions its steps take, no assertions"}}
	case Screenplay:
		shared = []file{
			{st.codeFile("screenplay", nil, "actor", false), "the actor: performs tasks and asks questions with its abilities"},
			{st.codeFile("screenplay/abilities", []string{"browse", "the"}, "web", false), "the ability to drive the browser"},
		}
		own = []file{
			{st.codeFile("screenplay/tasks", n.words, "tasks", false), "the tasks of " + label + ": one per step an actor performs"},
			{st.codeFile("screenplay/questions", n.words, "questions", false), "the questions of " + label + ": what its expected results check"},
		}
	case Fixture:
		switch {
		case fw == Cypress:
			own = []file{{"cypress/fixtures/" + n.kebab + ".json", "the fixture data of " + label}}
		case st.lang == python:
			own = []file{{"fixtures/" + n.snake + "_fixtures.py", "the fixtures of " + label + ", one per precondition, with clean-up after `yield`"}}
		case st.lang == java:
			own = []file{{st.codeFile("fixtures", n.words, "fixture", false), "the JUnit 5 extension setting up the preconditions of " + label}}
		default:
			own = []file{{st.root + "fixtures/" + n.kebab + ".fixture.ts", "the fixtures of " + label + ", one per precondition, with clean-up"}}
			shared = []file{{st.root + "fixtures/index.ts", "exports every suite's fixtures to the specs"}}
		}
	case Fluent:
		shared = []file{{st.codeFile("flows", []string{"base"}, "flow", false), "what every flow shares: the driver, the base URL, waiting for the page"}}
		own = []file{{st.codeFile("flows", n.words, "flow", false), "the fluent flow of " + label + ": chainable actions and checks in the order of its steps"}}
	case DataDriven:
		switch {
		case fw == Cypress, st.lang == java:
		case st.lang == python:
			shared = []file{{"utils/data_loader.py", "reads a suite's rows from data/ for `pytest.mark.parametrize`"}}
		default:
			shared = []file{{st.root + "utils/test-data.ts", "reads a suite's rows from data/, typed"}}
		}
		own = []file{{st.dataFile(n, fw), "the rows of " + label + ": one per variant of its tests, with the inputs and expected results"}}
	}
	return shared, own
}

// tree draws paths as a folder tree: folders first, then files, each in name order.
func tree(paths []string) string {
	type node struct {
		children map[string]*node
	}
	root := &node{children: map[string]*node{}}
	for _, p := range paths {
		n := root
		for _, part := range strings.Split(p, "/") {
			c, ok := n.children[part]
			if !ok {
				c = &node{children: map[string]*node{}}
				n.children[part] = c
			}
			n = c
		}
	}
	var b strings.Builder
	b.WriteString(".\n")
	var walk func(n *node, prefix string)
	walk = func(n *node, prefix string) {
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b string) int {
			da, db := len(n.children[a].children) > 0, len(n.children[b].children) > 0
			if da != db {
				if da {
					return -1
				}
				return 1
			}
			return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
		})
		for i, name := range names {
			branch, next := "├── ", "│   "
			if i == len(names)-1 {
				branch, next = "└── ", "    "
			}
			c := n.children[name]
			if len(c.children) > 0 {
				b.WriteString(prefix + branch + name + "/\n")
				walk(c, prefix+next)
			} else {
				b.WriteString(prefix + branch + name + "\n")
			}
		}
	}
	walk(root, "")
	return b.String()
}
