package scm

import "strings"

// Branch globs: '*' matches any run of characters but '/', "**" any run at all (slashes
// included), '?' one character but '/'; every other character stands for itself. "main",
// "release/*", "feature/**".

// maxGlobs and maxGlobLen bound a hook's branch globs.
const (
	maxGlobs   = 32
	maxGlobLen = 256
)

// Match reports whether branch matches glob, character by character (a '?' is one character,
// not one byte). It runs in O(len(glob)×len(branch)).
func Match(globText, branchText string) bool {
	glob, branch := []rune(globText), []rune(branchText)
	// prev[j]: glob[:i] matches branch[:j]; computed row by row over the glob.
	prev := make([]bool, len(branch)+1)
	cur := make([]bool, len(branch)+1)
	prev[0] = true
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		double := c == '*' && i+1 < len(glob) && glob[i+1] == '*'
		for j := range cur {
			cur[j] = false
		}
		switch {
		case double:
			// "**": any run, slashes included.
			seen := false
			for j := 0; j <= len(branch); j++ {
				seen = seen || prev[j]
				cur[j] = seen
			}
			i++ // the second '*'
		case c == '*':
			// any run without '/': extend from prev[j] while the characters are not '/'.
			for j := 0; j <= len(branch); j++ {
				cur[j] = prev[j] || (j > 0 && cur[j-1] && branch[j-1] != '/')
			}
		case c == '?':
			for j := 1; j <= len(branch); j++ {
				cur[j] = prev[j-1] && branch[j-1] != '/'
			}
		default:
			for j := 1; j <= len(branch); j++ {
				cur[j] = prev[j-1] && branch[j-1] == c
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(branch)]
}

// matchAny reports whether branch matches one of globs; no globs match every branch.
func matchAny(globs []string, branch string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if Match(g, branch) {
			return true
		}
	}
	return false
}

// validGlob reports a glob of 1 to maxGlobLen printable characters without spaces.
func validGlob(g string) bool {
	if g == "" || len(g) > maxGlobLen {
		return false
	}
	return !strings.ContainsFunc(g, func(r rune) bool { return r <= ' ' || r == 0x7f })
}
