package storetest

import (
	"fmt"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testTestCases covers the manual test cases: tenancy, uniqueness by suite and title, the
// filters and their order, the tag rows kept beside the test cases, the import's upsert and its
// one transaction, GetMany for the planner, and the cascade from a deleted project.
func testTestCases(t *testing.T, open Opener) {
	t.Run("CreateGet", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		u := f.user(o.ID, domain.RoleDeveloper)
		p := f.project(o.ID, "Web")
		c := f.newTestCase(o.ID, p.ID, "Checkout", "Pay by card", "smoke", "payments")
		c.Priority, c.Preconditions, c.CreatedBy = domain.PriorityHigh, "A cart with one item\nA test card", u.ID
		c.Steps = []domain.TestStep{{Action: "Open the cart", Expected: "One item"}, {Action: "Pay", Expected: ""}}
		c.ID = ""
		must(t, f.s.TestCases().Create(f.ctx, c))
		if !domain.IsObjectID(c.ID) {
			t.Fatalf("Create left ID %q", c.ID)
		}
		got, err := f.s.TestCases().Get(f.ctx, o.ID, c.ID)
		must(t, err)
		equal(t, "Get", got, c)

		_, err = f.s.TestCases().Get(f.ctx, other.ID, c.ID)
		wantErr(t, "Get from another organization", err, store.ErrNotFound)
		_, err = f.s.TestCases().Get(f.ctx, o.ID, domain.NewID())
		wantErr(t, "Get unknown", err, store.ErrNotFound)

		// The project must be the organization's.
		foreign := f.project(other.ID, "Theirs")
		stray := &domain.TestCase{OrganizationID: o.ID, ProjectID: foreign.ID, Title: "Stray", Tags: []string{}, Steps: []domain.TestStep{},
			CreatedBy: u.ID, CreatedAt: base, UpdatedAt: base}
		wantErr(t, "Create in another organization's project", f.s.TestCases().Create(f.ctx, stray), store.ErrNotFound)
		stray.ProjectID = domain.NewID()
		wantErr(t, "Create in an unknown project", f.s.TestCases().Create(f.ctx, stray), store.ErrNotFound)

		// Unique by suite and title in a project, exactly.
		dup := f.newTestCase(o.ID, p.ID, "Checkout", "Pay by card")
		wantErr(t, "Create with a taken suite and title", f.s.TestCases().Create(f.ctx, dup), store.ErrConflict)
		for _, ok := range []*domain.TestCase{
			f.newTestCase(o.ID, p.ID, "Cart", "Pay by card"),
			f.newTestCase(o.ID, p.ID, "Checkout", "Pay by Card"),
			f.newTestCase(o.ID, p.ID, "", "Pay by card"),
			f.newTestCase(o.ID, f.project(o.ID, "API").ID, "Checkout", "Pay by card"),
		} {
			must(t, f.s.TestCases().Create(f.ctx, ok))
		}
	})

	t.Run("ListFiltersAndOrder", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p, q := f.project(o.ID, "Web"), f.project(o.ID, "API")
		// Suites and titles sort by their bytes: "B" before "a", "" first.
		a := f.testCase(o.ID, p.ID, "a", "two", "smoke")
		b := f.testCase(o.ID, p.ID, "B", "one", "smoke", "slow")
		c := f.testCase(o.ID, p.ID, "a", "One", "smoke-x")
		d := f.testCase(o.ID, p.ID, "", "none", "Smoke")
		e := f.testCase(o.ID, q.ID, "a", "elsewhere", "smoke")
		f.testCase(other.ID, f.project(other.ID, "Theirs").ID, "a", "theirs", "smoke")

		list := func(filter store.TestCaseFilter) ([]string, int) {
			t.Helper()
			got, total, err := f.s.TestCases().List(f.ctx, o.ID, filter)
			must(t, err)
			if got == nil {
				t.Fatalf("List(%+v) = nil, want a non-nil slice", filter)
			}
			return ids(got, testCaseID), total
		}
		check := func(what string, filter store.TestCaseFilter, want []string, wantTotal int) {
			t.Helper()
			got, total := list(filter)
			equal(t, what, got, want)
			equal(t, what+" total", total, wantTotal)
		}
		check("project", store.TestCaseFilter{ProjectID: p.ID}, []string{d.ID, b.ID, c.ID, a.ID}, 4)
		check("organization", store.TestCaseFilter{}, []string{d.ID, b.ID, c.ID, e.ID, a.ID}, 5)
		check("suite", store.TestCaseFilter{ProjectID: p.ID, Suite: "a"}, []string{c.ID, a.ID}, 2)
		check("tag, exactly", store.TestCaseFilter{ProjectID: p.ID, Tag: "smoke"}, []string{b.ID, a.ID}, 2)
		check("tag across projects", store.TestCaseFilter{Tag: "smoke"}, []string{b.ID, e.ID, a.ID}, 3)
		check("suite and tag", store.TestCaseFilter{ProjectID: p.ID, Suite: "B", Tag: "slow"}, []string{b.ID}, 1)
		check("no match", store.TestCaseFilter{ProjectID: p.ID, Tag: "nope"}, []string{}, 0)
		check("page", store.TestCaseFilter{ProjectID: p.ID, Limit: 2, Offset: 1}, []string{b.ID, c.ID}, 4)
		check("past the end", store.TestCaseFilter{ProjectID: p.ID, Limit: 2, Offset: 10}, []string{}, 4)
		check("offset without limit", store.TestCaseFilter{ProjectID: p.ID, Offset: 3}, []string{a.ID}, 4)

		got, total, err := f.s.TestCases().List(f.ctx, other.ID, store.TestCaseFilter{ProjectID: p.ID})
		must(t, err)
		if len(got) != 0 || total != 0 {
			t.Errorf("another organization lists %d (total %d) of this project's test cases", len(got), total)
		}
	})

	t.Run("UpdateDelete", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p, q := f.project(o.ID, "Web"), f.project(o.ID, "API")
		c := f.testCase(o.ID, p.ID, "Login", "Sign in", "smoke", "auth")
		taken := f.testCase(o.ID, p.ID, "Login", "Sign out")

		up := *c
		up.Suite, up.Title, up.Tags = "Auth", "Sign in with SSO", []string{"auth", "sso"}
		up.Priority, up.Preconditions = domain.PriorityCritical, "An SSO provider"
		up.Steps = []domain.TestStep{{Action: "Click SSO", Expected: "The provider's page"}}
		up.UpdatedAt = c.UpdatedAt.Add(time.Hour)
		up.ProjectID, up.CreatedBy, up.CreatedAt = q.ID, "someone else", base.Add(48*time.Hour) // not changeable
		must(t, f.s.TestCases().Update(f.ctx, &up))
		got, err := f.s.TestCases().Get(f.ctx, o.ID, c.ID)
		must(t, err)
		want := up
		want.ProjectID, want.CreatedBy, want.CreatedAt = c.ProjectID, c.CreatedBy, c.CreatedAt
		equal(t, "after Update", *got, want)
		byTag := func(tag string) []string {
			t.Helper()
			list, _, err := f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: p.ID, Tag: tag})
			must(t, err)
			return ids(list, testCaseID)
		}
		equal(t, "old tag", byTag("smoke"), []string{})
		equal(t, "new tag", byTag("sso"), []string{c.ID})

		rename := up
		rename.Suite, rename.Title = taken.Suite, taken.Title
		wantErr(t, "Update to a taken suite and title", f.s.TestCases().Update(f.ctx, &rename), store.ErrConflict)
		foreign := up
		foreign.OrganizationID = other.ID
		wantErr(t, "Update from another organization", f.s.TestCases().Update(f.ctx, &foreign), store.ErrNotFound)
		wantErr(t, "Delete from another organization", f.s.TestCases().Delete(f.ctx, other.ID, c.ID), store.ErrNotFound)

		must(t, f.s.TestCases().Delete(f.ctx, o.ID, c.ID))
		_, err = f.s.TestCases().Get(f.ctx, o.ID, c.ID)
		wantErr(t, "Get deleted", err, store.ErrNotFound)
		wantErr(t, "Delete twice", f.s.TestCases().Delete(f.ctx, o.ID, c.ID), store.ErrNotFound)
		wantErr(t, "Update deleted", f.s.TestCases().Update(f.ctx, &up), store.ErrNotFound)
		opts, err := f.s.TestCases().FilterOptions(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "tags once the test case is deleted", opts.Tags, []string{})
	})

	t.Run("Import", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		u := f.user(o.ID, domain.RoleDeveloper)
		p := f.project(o.ID, "Web")
		kept := f.testCase(o.ID, p.ID, "Cart", "Add an item", "old")
		at := base.Add(24 * time.Hour)
		file := func() []domain.TestCase {
			return []domain.TestCase{
				{Suite: "Cart", Title: "Add an item", Tags: []string{"smoke"}, Priority: domain.PriorityHigh, Preconditions: "p",
					Steps: []domain.TestStep{{Action: "Add", Expected: "Added"}}, CreatedBy: u.ID, CreatedAt: at, UpdatedAt: at},
				{Suite: "Cart", Title: "Remove an item", Tags: []string{"smoke", "cart"}, Steps: []domain.TestStep{}, CreatedBy: u.ID, CreatedAt: at, UpdatedAt: at},
				{Suite: "", Title: "Loose", Tags: []string{}, Steps: []domain.TestStep{}, CreatedBy: u.ID, CreatedAt: at, UpdatedAt: at},
			}
		}
		first := file()
		res, err := f.s.TestCases().Import(f.ctx, o.ID, p.ID, first)
		must(t, err)
		equal(t, "first import", res, store.ImportResult{Imported: 2, Updated: 1})
		if first[0].ID != kept.ID || !domain.IsObjectID(first[1].ID) || !domain.IsObjectID(first[2].ID) {
			t.Fatalf("import IDs %q %q %q; the matched one should be %q", first[0].ID, first[1].ID, first[2].ID, kept.ID)
		}
		got, err := f.s.TestCases().Get(f.ctx, o.ID, kept.ID)
		must(t, err)
		want := first[0]
		want.OrganizationID, want.ProjectID, want.CreatedBy, want.CreatedAt = o.ID, p.ID, kept.CreatedBy, kept.CreatedAt
		equal(t, "the matched test case, replaced but for its creator and creation time", *got, want)
		added, err := f.s.TestCases().Get(f.ctx, o.ID, first[1].ID)
		must(t, err)
		equal(t, "an added test case", *added, first[1])

		// The same file again: every test case updated, none added.
		again := file()
		res, err = f.s.TestCases().Import(f.ctx, o.ID, p.ID, again)
		must(t, err)
		equal(t, "second import", res, store.ImportResult{Imported: 0, Updated: 3})
		equal(t, "IDs of the second import", ids(again, testCaseID), ids(first, testCaseID))
		_, total, err := f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: p.ID})
		must(t, err)
		equal(t, "test cases after two imports", total, 3)
		opts, err := f.s.TestCases().FilterOptions(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "options after two imports", opts, store.TestCaseOptions{Suites: []string{"Cart"}, Tags: []string{"cart", "smoke"}})

		// A key repeated in one import: the later case wins, and counts as updated.
		twice := []domain.TestCase{
			{Suite: "New", Title: "Twice", Tags: []string{"a"}, Steps: []domain.TestStep{}, CreatedBy: u.ID, CreatedAt: at, UpdatedAt: at},
			{Suite: "New", Title: "Twice", Tags: []string{"b"}, Steps: []domain.TestStep{}, CreatedBy: u.ID, CreatedAt: at, UpdatedAt: at},
		}
		res, err = f.s.TestCases().Import(f.ctx, o.ID, p.ID, twice)
		must(t, err)
		equal(t, "a repeated key", res, store.ImportResult{Imported: 1, Updated: 1})
		if twice[0].ID != twice[1].ID {
			t.Fatalf("a repeated key got two IDs: %s, %s", twice[0].ID, twice[1].ID)
		}
		got, err = f.s.TestCases().Get(f.ctx, o.ID, twice[0].ID)
		must(t, err)
		equal(t, "the later case's tags", got.Tags, []string{"b"})

		// Another organization's project, or an unknown one: nothing written.
		_, err = f.s.TestCases().Import(f.ctx, other.ID, p.ID, file())
		wantErr(t, "Import into another organization's project", err, store.ErrNotFound)
		_, err = f.s.TestCases().Import(f.ctx, o.ID, domain.NewID(), file())
		wantErr(t, "Import into an unknown project", err, store.ErrNotFound)

		// One transaction: a failing row (an ID in use elsewhere) leaves nothing behind.
		q := f.project(o.ID, "API")
		broken := file()
		broken[2].ID = kept.ID
		if _, err = f.s.TestCases().Import(f.ctx, o.ID, q.ID, broken); err == nil {
			t.Fatal("an import with an ID in use succeeded")
		}
		list, total, err := f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: q.ID})
		must(t, err)
		if total != 0 {
			t.Fatalf("a failed import left %d test cases: %+v", total, list)
		}
		opts, err = f.s.TestCases().FilterOptions(f.ctx, o.ID, q.ID)
		must(t, err)
		equal(t, "tags of a failed import", opts.Tags, []string{})
	})

	t.Run("ImportManyAndGetMany", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p := f.project(o.ID, "Web")
		const n = 300 // past one multi-row statement
		cases := make([]domain.TestCase, n)
		for i := range cases {
			cases[i] = domain.TestCase{Suite: fmt.Sprintf("S%d", i%7), Title: fmt.Sprintf("T%03d", i),
				Tags: []string{"all", fmt.Sprintf("m%d", i%3)}, Steps: []domain.TestStep{{Action: "a"}}, CreatedBy: "u",
				CreatedAt: base, UpdatedAt: base}
		}
		res, err := f.s.TestCases().Import(f.ctx, o.ID, p.ID, cases)
		must(t, err)
		equal(t, "import", res, store.ImportResult{Imported: n})
		_, total, err := f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: p.ID, Tag: "all", Limit: 1})
		must(t, err)
		equal(t, "tagged all", total, n)
		_, total, err = f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: p.ID, Tag: "m1", Limit: 1})
		must(t, err)
		equal(t, "tagged m1", total, n/3)
		res, err = f.s.TestCases().Import(f.ctx, o.ID, p.ID, cases)
		must(t, err)
		equal(t, "import again", res, store.ImportResult{Updated: n})
		_, total, err = f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{ProjectID: p.ID, Tag: "all"})
		must(t, err)
		equal(t, "tagged all after the second import", total, n)

		theirs := f.testCase(other.ID, f.project(other.ID, "Theirs").ID, "S", "theirs")
		var want, ask []string
		for i := n - 1; i >= 0; i -= 2 {
			ask = append(ask, cases[i].ID, theirs.ID, domain.NewID(), cases[i].ID)
			want = append(want, cases[i].ID)
		}
		got, err := f.s.TestCases().GetMany(f.ctx, o.ID, ask)
		must(t, err)
		equal(t, "GetMany: the organization's, in order, once", ids(got, testCaseID), want)
		if got[0].Title != cases[n-1].Title || len(got[0].Steps) != 1 {
			t.Errorf("GetMany's first test case: %+v", got[0])
		}
		got, err = f.s.TestCases().GetMany(f.ctx, other.ID, []string{cases[0].ID})
		must(t, err)
		equal(t, "GetMany from another organization", len(got), 0)
		got, err = f.s.TestCases().GetMany(f.ctx, o.ID, nil)
		must(t, err)
		if got == nil || len(got) != 0 {
			t.Errorf("GetMany of nothing = %#v, want empty non-nil", got)
		}
	})

	t.Run("FilterOptions", func(t *testing.T) {
		f := setup(t, open)
		o, other := f.org(), f.org()
		p, q := f.project(o.ID, "Web"), f.project(o.ID, "API")
		f.testCase(o.ID, p.ID, "b", "1", "z", "Y")
		f.testCase(o.ID, p.ID, "B", "2", "z")
		f.testCase(o.ID, p.ID, "", "3", "x")
		f.testCase(o.ID, q.ID, "elsewhere", "4", "w")
		opts, err := f.s.TestCases().FilterOptions(f.ctx, o.ID, p.ID)
		must(t, err)
		equal(t, "options", opts, store.TestCaseOptions{Suites: []string{"B", "b"}, Tags: []string{"Y", "x", "z"}})
		for what, orgID := range map[string]string{"another organization": other.ID, "an empty project": o.ID} {
			projectID := p.ID
			if orgID == o.ID {
				projectID = f.project(o.ID, "Empty").ID
			}
			opts, err = f.s.TestCases().FilterOptions(f.ctx, orgID, projectID)
			must(t, err)
			if opts.Suites == nil || opts.Tags == nil || len(opts.Suites)+len(opts.Tags) != 0 {
				t.Errorf("options of %s: %#v, want empty non-nil lists", what, opts)
			}
		}
	})

	t.Run("DeletingTheProjectDeletesItsTestCases", func(t *testing.T) {
		f := setup(t, open)
		o := f.org()
		p, q := f.project(o.ID, "Web"), f.project(o.ID, "API")
		c := f.testCase(o.ID, p.ID, "S", "Gone", "t")
		stays := f.testCase(o.ID, q.ID, "S", "Stays", "t")
		must(t, f.s.Projects().Delete(f.ctx, o.ID, p.ID))
		_, err := f.s.TestCases().Get(f.ctx, o.ID, c.ID)
		wantErr(t, "Get a test case of a deleted project", err, store.ErrNotFound)
		list, total, err := f.s.TestCases().List(f.ctx, o.ID, store.TestCaseFilter{Tag: "t"})
		must(t, err)
		equal(t, "by tag after the project's deletion", ids(list, testCaseID), []string{stays.ID})
		equal(t, "total", total, 1)
	})
}

func testCaseID(c domain.TestCase) string { return c.ID }

// newTestCase is a valid test case of the project, not stored; each later one is created a
// minute later.
func (f *fixture) newTestCase(orgID, projectID, suite, title string, tags ...string) *domain.TestCase {
	n := f.next()
	at := base.Add(time.Duration(n) * time.Minute)
	if tags == nil {
		tags = []string{}
	}
	return &domain.TestCase{ID: domain.NewID(), OrganizationID: orgID, ProjectID: projectID, Suite: suite, Title: title,
		Tags: tags, Steps: []domain.TestStep{}, CreatedBy: "creator", CreatedAt: at, UpdatedAt: at}
}

// testCase stores a new test case of the project.
func (f *fixture) testCase(orgID, projectID, suite, title string, tags ...string) *domain.TestCase {
	f.t.Helper()
	c := f.newTestCase(orgID, projectID, suite, title, tags...)
	must(f.t, f.s.TestCases().Create(f.ctx, c))
	return c
}
