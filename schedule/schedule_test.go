package schedule

import (
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ticks(t *testing.T, expr, tz, from string, n int) string {
	t.Helper()
	s, err := Parse(expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range s.Upcoming(at(t, from), n) {
		out = append(out, v.Format(time.RFC3339))
	}
	return strings.Join(out, " ")
}

// Europe/Berlin in 2026: clocks go from 02:00 to 03:00 on 29 March (02:30
// does not exist) and from 03:00 back to 02:00 on 25 October (02:30 comes
// twice).
func TestDaylightSaving(t *testing.T) {
	for _, tc := range []struct{ expr, from, want string }{
		// The day without 02:30 has no tick.
		{"30 2 * * *", "2026-03-27T12:00:00Z", "2026-03-28T01:30:00Z 2026-03-30T00:30:00Z 2026-03-31T00:30:00Z"},
		// The day with two 02:30s ticks once, at the first.
		{"30 2 * * *", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z 2026-10-26T01:30:00Z"},
		// Every half hour through the repeated hour: 02:00 and 02:30 once.
		{"*/30 * * * *", "2026-10-24T23:45:00Z", "2026-10-25T00:00:00Z 2026-10-25T00:30:00Z 2026-10-25T02:00:00Z 2026-10-25T02:30:00Z"},
		// An hourly tick on the short day: 01:00, then 03:00 CEST.
		{"0 * * * *", "2026-03-28T23:30:00Z", "2026-03-29T00:00:00Z 2026-03-29T01:00:00Z 2026-03-29T02:00:00Z"},
	} {
		if got := ticks(t, tc.expr, "Europe/Berlin", tc.from, len(strings.Fields(tc.want))); got != tc.want {
			t.Errorf("%s from %s: %s, want %s", tc.expr, tc.from, got, tc.want)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, tc := range []struct{ expr, tz, from, want string }{
		{"@every 1m", "", "2026-11-28T12:00:30Z", "2026-11-28T12:01:00Z 2026-11-28T12:02:00Z"},
		{"@every 2h", "Asia/Tokyo", "2026-11-28T12:00:00Z", "2026-11-28T14:00:00Z 2026-11-28T16:00:00Z"},
		{"@daily", "America/New_York", "2026-11-28T12:00:00Z", "2026-11-29T05:00:00Z 2026-11-30T05:00:00Z"},
		{"@hourly", "", "2026-11-28T12:00:00Z", "2026-11-28T13:00:00Z"},
		{"0 9 * * 1-5", "Europe/Berlin", "2026-11-27T12:00:00Z", "2026-11-30T08:00:00Z 2026-12-01T08:00:00Z"},
		{"15,45 */6 1 * *", "", "2026-11-28T00:00:00Z", "2026-12-01T00:15:00Z 2026-12-01T00:45:00Z 2026-12-01T06:15:00Z"},
	} {
		if got := ticks(t, tc.expr, tc.tz, tc.from, len(strings.Fields(tc.want))); got != tc.want {
			t.Errorf("%s (%s) from %s: %s, want %s", tc.expr, tc.tz, tc.from, got, tc.want)
		}
	}
}

func TestLatest(t *testing.T) {
	s, _ := Parse("@every 1m", "")
	if got, ok := s.Latest(at(t, "2026-11-28T11:00:00Z"), at(t, "2026-11-28T12:00:59Z")); !ok || got != at(t, "2026-11-28T12:00:00Z") {
		t.Fatalf("@every: %s %v", got, ok)
	}
	if _, ok := s.Latest(at(t, "2026-11-28T12:00:00Z"), at(t, "2026-11-28T12:00:59Z")); ok {
		t.Fatal("a tick at since itself is not after it")
	}
	d, _ := Parse("*/15 * * * *", "")
	if got, ok := d.Latest(at(t, "2026-11-28T11:00:00Z"), at(t, "2026-11-28T12:14:00Z")); !ok || got != at(t, "2026-11-28T12:00:00Z") {
		t.Fatalf("cron: %s %v", got, ok)
	}
}

func TestParseRefuses(t *testing.T) {
	for expr, want := range map[string]string{
		"* * *":                 "must be five fields",
		"@every 30s":            "@every takes a whole number of minutes or hours",
		"@every 0m":             "@every takes",
		"@every 800h":           "at most 31 days",
		"@yearly":               "is not one of @hourly",
		"61 * * * *":            "61",
		"* * * * * *":           "must be five fields",
		"CRON_TZ=UTC * * * * *": "five fields",
	} {
		if _, err := Parse(expr, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", expr, err, want)
		}
	}
	for _, tz := range []string{"Mars/Olympus", "Local", "../../etc/passwd"} {
		if _, err := Parse("@daily", tz); err == nil {
			t.Errorf("time zone %q was taken", tz)
		}
	}
}
