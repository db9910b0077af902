package domain

import "fmt"

// AlertType is a usage alert band.
type AlertType string

const (
	AlertInfo     AlertType = "info"     // 50 to 79 percent
	AlertWarning  AlertType = "warning"  // 80 to 99 percent
	AlertCritical AlertType = "critical" // 100 percent and over
)

// UsageAlert is one entry of the usage route's alerts.
type UsageAlert struct {
	Type        AlertType `json:"type"`
	Resource    string    `json:"resource"`
	Message     string    `json:"message"`
	PercentUsed int       `json:"percentUsed"`
}

// AlertThresholds are the percentages at which usage-alert e-mails go out.
var AlertThresholds = []int{50, 80, 90, 100}

// PercentUsed is used/limit as a whole percentage, rounded down; 0 for an unlimited or zero
// limit.
func PercentUsed(used, limit int64) int {
	if limit <= 0 {
		return 0
	}
	return int(used * 100 / limit)
}

// AlertFor returns the alert for a resource at used of limit, or nil below 50 percent.
func AlertFor(resource string, used, limit int64) *UsageAlert {
	p := PercentUsed(used, limit)
	var t AlertType
	switch {
	case p >= 100:
		t = AlertCritical
	case p >= 80:
		t = AlertWarning
	case p >= 50:
		t = AlertInfo
	default:
		return nil
	}
	return &UsageAlert{Type: t, Resource: resource, PercentUsed: p,
		Message: fmt.Sprintf("%s usage is at %d%% of your plan's limit (%d of %d)", resource, p, used, limit)}
}

// CrossedThreshold returns the highest alert threshold reached at used of limit, or 0.
func CrossedThreshold(used, limit int64) int {
	p := PercentUsed(used, limit)
	best := 0
	for _, t := range AlertThresholds {
		if p >= t {
			best = t
		}
	}
	return best
}
