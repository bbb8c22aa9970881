package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQuantilesWithinFivePercent: over 10,000 durations spread from 50 µs
// to 5 s, each quantile read from the histogram is within 5 % of the
// exact one (nearest rank), and merging halves changes nothing.
func TestQuantilesWithinFivePercent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	var a, b Histogram
	for i := range 10_000 {
		d := time.Duration(math.Exp(math.Log(50e3) + r.Float64()*math.Log(5e9/50e3)))
		all = append(all, d)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(b)
	slices.Sort(all)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
		exact := all[int(math.Ceil(q*float64(len(all))))-1]
		got := a.Quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.05 {
			t.Errorf("q %.3f: %v, exact %v (%.1f %% off)", q, got, exact, 100*rel)
		}
	}
	if a.Total() != 10_000 {
		t.Fatalf("total %d", a.Total())
	}
	if back := Decode(a.Encode()); back.Quantile(0.99) != a.Quantile(0.99) || back.Total() != a.Total() {
		t.Fatal("encoding lost counts")
	}
}

func TestBucketsAndClasses(t *testing.T) {
	if Bucket(0) != 0 || Bucket(time.Hour) != Buckets-1 || Bucket(base) != 0 || Bucket(11*time.Microsecond) != 1 {
		t.Fatalf("buckets: %d %d %d %d", Bucket(0), Bucket(time.Hour), Bucket(base), Bucket(11*time.Microsecond))
	}
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Encode() != nil {
		t.Fatal("an empty histogram")
	}
	h.Add(time.Second)
	h.Add(time.Millisecond)
	if h.First != Bucket(time.Millisecond) || len(h.Counts) != Bucket(time.Second)-Bucket(time.Millisecond)+1 {
		t.Fatalf("%d %d", h.First, len(h.Counts))
	}
	for _, c := range []struct {
		status int
		ended  string
		want   string
	}{{200, "RETURN", "2xx"}, {201, "RETURN", "2xx"}, {304, "RETURN", "3xx"}, {404, "FAIL", "4xx"}, {400, "REFUSED", "4xx"},
		{500, "FAULT", "5xx"}, {502, "FAULT", "5xx"}, {429, "LIMITED", "LIMITED"}, {503, "BUSY", "BUSY"}, {503, "FAULT", "5xx"}} {
		if got := Class(c.status, c.ended); got != c.want {
			t.Errorf("%d %s: %s", c.status, c.ended, got)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Add(time.Duration(i%5000) * time.Microsecond)
	}
}

// TestSparkline: hours with data are joined, a lone hour is a short
// stroke, a missing hour breaks the line; the span names the extremes.
func TestSparkline(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	path, span := Sparkline([]*float64{v(1), v(3), nil, v(2), nil})
	if path != "M0.0 22.0L24.0 2.0M71.0 12.0h2" || span != "1.0 to 3.0 ms" {
		t.Fatalf("%q %q", path, span)
	}
	if path, span := Sparkline([]*float64{nil, nil}); path != "" || span != "" {
		t.Fatalf("no data: %q %q", path, span)
	}
	var h Histogram
	if h.Millis(0.99) != nil {
		t.Fatal("an empty histogram has no quantile")
	}
	h.Add(3 * time.Millisecond)
	if p := h.Millis(0.5); p == nil || *p <= 0 {
		t.Fatalf("median %v", p)
	}
}
