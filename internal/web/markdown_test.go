package web

import (
	"bytes"
	"strings"
	"testing"
)

// Whatever the document, reading it ends, and the plan page writes none of its markup.
func FuzzMarkdownBlocks(f *testing.F) {
	for _, seed := range []string{savedPlan.Markdown, "```", "| a |\n|", "1. x\n  y\n- z", "**`", "# \n##x", "`` ` ``"} {
		f.Add(seed)
	}
	page := parsePages()["plan"]
	f.Fuzz(func(t *testing.T, md string) {
		md = strings.ReplaceAll(md, "<", "") + "<u>x</u>"
		var buf bytes.Buffer
		if err := page.ExecuteTemplate(&buf, "layout", page0(planData{Plan: savedPlan, Blocks: markdownBlocks(md)})); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "<u>") {
			t.Fatalf("markup of the document reached the page: %q", md)
		}
	})
}

func page0(d any) page { return page{Title: "Plan", Nav: "plan", Data: d} }
