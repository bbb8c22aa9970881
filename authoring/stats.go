package authoring

import (
	"cmp"
	"fmt"
	"time"

	"stencil/store"
)

// The rules of a query of route analytics (docs/routes.md, "Analytics").

// StepResolutions are the rollups' resolutions by the API's steps.
var StepResolutions = map[string]byte{"minute": store.Minute, "hour": store.Hour, "day": store.Day}

// maxPoints bounds the points of a series: 90 days by hour, or 48 hours
// by minute, fit.
const maxPoints = 5000

// StatsRange reads a stats query's range and step: from and to RFC 3339, cut
// to whole steps (to rounded up, so the step under way is in), by
// default the last 24 hours by minute.
func StatsRange(fromText, toText, stepText string, now time.Time) (from, to time.Time, step string, err error) {
	step = cmp.Or(stepText, "minute")
	res := StepResolutions[step]
	bad := map[string]string{}
	to = now
	if toText != "" {
		if to, err = time.Parse(time.RFC3339, toText); err != nil {
			bad["to"] = "must be a time in RFC 3339, like 2026-11-27T10:00:00Z"
		}
	}
	to = store.Ceil(to, res)
	from = to.Add(-24 * time.Hour)
	if fromText != "" {
		if from, err = time.Parse(time.RFC3339, fromText); err != nil {
			bad["from"] = "must be a time in RFC 3339, like 2026-11-26T10:00:00Z"
		}
	}
	from = store.Truncate(from, res)
	switch {
	case len(bad) > 0:
	case !from.Before(to):
		bad["from"] = "must be before to"
	case store.Steps(from, to, res) > maxPoints:
		bad["step"] = fmt.Sprintf("gives %d points from %s to %s: at most %d; choose a larger step or a shorter range",
			store.Steps(from, to, res), from.Format(time.RFC3339), to.Format(time.RFC3339), maxPoints)
	}
	if len(bad) > 0 {
		return from, to, step, &Problems{Fields: bad}
	}
	return from, to, step, nil
}
