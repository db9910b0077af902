package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// testPlans covers saved automation plans: read back whole, listed newest first without their
// Markdown, per project, and never across organizations.
func testPlans(t *testing.T, open Opener) {
	f := setup(t, open)
	o, other := f.org(), f.org()
	plans := f.s.Plans()
	var made []*domain.AutomationPlan
	for i := range 4 {
		p := &domain.AutomationPlan{OrganizationID: o.ID, ProjectID: fmt.Sprint("p", i%2), Framework: "playwright",
			DesignPattern: "Page Object", TestIDs: []string{"t1", fmt.Sprint("t", i+2)}, Markdown: fmt.Sprint("# Plan ", i),
			Provider: "builtin", Model: "builtin", CreatedBy: "u1", CreatedAt: base.Add(time.Duration(i) * time.Minute)}
		must(t, plans.Create(f.ctx, p))
		if p.ID == "" {
			t.Fatal("Create left the ID empty")
		}
		made = append(made, p)
	}
	must(t, plans.Create(f.ctx, &domain.AutomationPlan{OrganizationID: other.ID, ProjectID: "p0", Framework: "pytest",
		DesignPattern: "Fixture", Markdown: "x", Provider: "builtin", Model: "builtin", CreatedBy: "u2", CreatedAt: base}))

	got, err := plans.Get(f.ctx, o.ID, made[1].ID)
	must(t, err)
	if !reflect.DeepEqual(got, made[1]) {
		t.Fatalf("Get = %+v, want %+v", got, made[1])
	}
	_, err = plans.Get(f.ctx, other.ID, made[1].ID)
	wantErr(t, "Get from another organization", err, store.ErrNotFound)

	all, err := plans.List(f.ctx, o.ID, "", 3)
	must(t, err)
	if len(all) != 3 || all[0].ID != made[3].ID || all[2].ID != made[1].ID || all[0].Markdown != "" ||
		!reflect.DeepEqual(all[0].TestIDs, made[3].TestIDs) {
		t.Fatalf("List = %+v", all)
	}
	p0, err := plans.List(f.ctx, o.ID, "p0", 20)
	must(t, err)
	if len(p0) != 2 || p0[0].ID != made[2].ID || p0[1].ID != made[0].ID {
		t.Fatalf("List of project p0 = %+v", p0)
	}
}
