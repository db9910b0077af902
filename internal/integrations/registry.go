package integrations

import (
	"verdict/internal/integrations/jira"
	"verdict/internal/integrations/linear"
	"verdict/internal/integrations/monday"
	"verdict/internal/integrations/tracker"
)

// registry holds the trackers, in the order the API and the dashboard show them. A new tracker
// is a package implementing tracker.Tracker with its tracker.Provider, and one line here.
var registry = []tracker.Provider{
	linear.Provider,
	monday.Provider,
	jira.Provider,
}

// Trackers are the registered trackers' descriptions, in order.
func Trackers() []tracker.Spec {
	out := make([]tracker.Spec, len(registry))
	for i, p := range registry {
		out[i] = p.Spec
	}
	return out
}

// Lookup is the registered tracker named provider.
func Lookup(provider string) (tracker.Spec, bool) {
	for _, p := range registry {
		if p.Provider == provider {
			return p.Spec, true
		}
	}
	return tracker.Spec{}, false
}
