// Package schedule reads a route schedule's cron expression in its time
// zone and says when its ticks fall (docs/schedules.md): the ticks every
// instance computes alike, so that a tick is claimed once across them.
// Pure: the caller gives the time.
package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	// Go's own copy of the time zone database, for a machine without one.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron expression in a time zone.
type Schedule struct {
	spec  cron.Schedule  // a cron expression's, nil for @every
	every time.Duration  // @every's interval
	loc   *time.Location // where the expression's wall clock is read
}

// MaxEvery bounds @every's interval: a month of 31 days.
const MaxEvery = 31 * 24 * time.Hour

var (
	everyPattern = regexp.MustCompile(`^@every ([1-9][0-9]{0,5})(m|h)$`)
	parser       = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	// descriptors are the @names a schedule may use besides @every.
	descriptors = map[string]bool{"@hourly": true, "@daily": true, "@weekly": true, "@monthly": true}
)

// Parse reads expr — five fields (minute hour day-of-month month
// day-of-week, with *, lists, ranges and steps), @hourly, @daily,
// @weekly, @monthly, or @every <n>m|h — in the IANA time zone tz ("" is
// UTC). Its errors say what is wrong, for a message.
func Parse(expr, tz string) (Schedule, error) {
	loc, err := Zone(tz)
	if err != nil {
		return Schedule{}, err
	}
	expr = strings.TrimSpace(expr)
	if m := everyPattern.FindStringSubmatch(expr); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := time.Minute
		if m[2] == "h" {
			unit = time.Hour
		}
		d := time.Duration(n) * unit
		if d > MaxEvery {
			return Schedule{}, fmt.Errorf("@every is at most 31 days")
		}
		return Schedule{every: d, loc: loc}, nil
	}
	if strings.HasPrefix(expr, "@every") {
		return Schedule{}, errors.New("@every takes a whole number of minutes or hours, at least 1m: @every 15m, @every 2h")
	}
	if strings.HasPrefix(expr, "@") && !descriptors[expr] {
		return Schedule{}, fmt.Errorf("%q is not one of @hourly, @daily, @weekly, @monthly, @every <n>m|h", expr)
	}
	if !strings.HasPrefix(expr, "@") && len(strings.Fields(expr)) != 5 {
		return Schedule{}, errors.New("must be five fields (minute hour day-of-month month day-of-week) or one of @hourly, @daily, @weekly, @monthly, @every <n>m|h")
	}
	if strings.Contains(expr, "TZ=") {
		return Schedule{}, errors.New("names its time zone in timezone, not in the expression")
	}
	spec, err := parser.Parse(expr)
	if err != nil {
		return Schedule{}, errors.New(strings.TrimPrefix(err.Error(), "failed to parse "))
	}
	if s, ok := spec.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	return Schedule{spec: spec, loc: loc}, nil
}

// Zone is the IANA time zone name ("" is UTC), from the system's zoneinfo
// or Go's embedded copy.
func Zone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	if strings.EqualFold(name, "local") {
		return nil, errors.New(`must be an IANA time zone such as "Europe/Berlin", not Local`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not an IANA time zone such as \"Europe/Berlin\"", name)
	}
	return loc, nil
}

// Next is the first tick after t. A wall-clock time that does not exist
// in the zone (the hour daylight saving skips) has no tick; one that
// happens twice (the hour it repeats) ticks once, the first time. @every
// ticks at whole multiples of its interval since the Unix epoch, the same
// on every instance.
func (s Schedule) Next(t time.Time) time.Time {
	if s.spec == nil {
		d := int64(s.every)
		return time.Unix(0, (t.UnixNano()/d+1)*d).UTC()
	}
	n := s.spec.Next(t)
	for i := 0; i < 4 && !n.IsZero() && s.repeated(n); i++ {
		n = s.spec.Next(n)
	}
	return n.UTC()
}

// repeated says whether the wall-clock time of tick n was already shown
// a little earlier: n is the second pass of an hour daylight saving
// repeats (shifts of 30 minutes, an hour or two).
func (s Schedule) repeated(n time.Time) bool {
	wall := n.In(s.loc).Format("2006-01-02 15:04:05")
	for _, back := range []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour} {
		if n.Add(-back).In(s.loc).Format("2006-01-02 15:04:05") == wall {
			return true
		}
	}
	return false
}

// Upcoming are the next n ticks after t.
func (s Schedule) Upcoming(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Latest is the last tick at or before now and after since, if any: the
// one tick a schedule runs after it was away (a restart) or at its time.
// A cron expression's ticks are walked from since: keep it near (the
// scheduler looks back an hour at most).
func (s Schedule) Latest(since, now time.Time) (time.Time, bool) {
	if s.spec == nil {
		d := int64(s.every)
		last := time.Unix(0, now.UnixNano()/d*d).UTC()
		return last, last.After(since)
	}
	var last time.Time
	for t := s.Next(since); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last, !last.IsZero()
}
