// Package stats is the arithmetic of route analytics (docs/routes.md): a
// run's status class, and the latency histogram from which p50, p95 and
// p99 are read within 5 % relative error. Pure Go, no I/O.
package stats

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Classes of a run's answer, as rollups count them.
const (
	Class2xx     = "2xx"
	Class3xx     = "3xx"
	Class4xx     = "4xx"
	Class5xx     = "5xx"
	ClassLimited = "LIMITED" // refused by the project's rate limit (429)
	ClassBusy    = "BUSY"    // refused for want of room, or under contention (503)
)

// Class is the class of a run that answered status and ended so.
func Class(status int, ended string) string {
	switch {
	case ended == "LIMITED":
		return ClassLimited
	case ended == "BUSY":
		return ClassBusy
	case status >= 500:
		return Class5xx
	case status >= 400:
		return Class4xx
	case status >= 300:
		return Class3xx
	}
	return Class2xx
}

// The histogram's buckets grow by growth from base: bucket i holds the
// durations in [base·growthⁱ, base·growthⁱ⁺¹), bucket 0 also those below
// base, the last also those above. Reading a bucket as the geometric
// middle of its bounds is off by at most √growth − 1 (4.9 %) of the value.
const (
	base    = 10 * time.Microsecond
	growth  = 1.1
	Buckets = 180 // base·1.1¹⁸⁰ ≈ 285 s: past any request's deadline
)

var logGrowth = math.Log(growth)

// Bucket is the bucket of duration d.
func Bucket(d time.Duration) int {
	if d < base {
		return 0
	}
	i := int(math.Log(float64(d)/float64(base)) / logGrowth)
	return min(i, Buckets-1)
}

// Middle is the duration a bucket stands for: the geometric middle of its
// bounds.
func Middle(i int) time.Duration {
	return time.Duration(float64(base) * math.Pow(growth, float64(i)+0.5))
}

// Histogram counts durations by bucket, from its First bucket on: Counts[j]
// is the count of bucket First+j. The zero value is empty.
type Histogram struct {
	First  int
	Counts []int64
}

// Add counts one duration.
func (h *Histogram) Add(d time.Duration) { h.AddBucket(Bucket(d), 1) }

// AddBucket counts n in bucket i.
func (h *Histogram) AddBucket(i int, n int64) {
	switch {
	case len(h.Counts) == 0:
		h.First, h.Counts = i, []int64{n}
		return
	case i < h.First:
		h.Counts = append(make([]int64, h.First-i), h.Counts...)
		h.First = i
	case i >= h.First+len(h.Counts):
		h.Counts = append(h.Counts, make([]int64, i-h.First-len(h.Counts)+1)...)
	}
	h.Counts[i-h.First] += n
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o Histogram) {
	for j, n := range o.Counts {
		if n != 0 {
			h.AddBucket(o.First+j, n)
		}
	}
}

// Each gives each bucket h counts, as the duration it stands for (its
// middle), and its count.
func (h Histogram) Each(each func(d time.Duration, n int64)) {
	for j, n := range h.Counts {
		if n != 0 {
			each(Middle(h.First+j), n)
		}
	}
}

// Total is how many durations h counts.
func (h Histogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile is the duration below which a fraction q (0 < q ≤ 1) of the
// counted durations lie, by nearest rank: the middle of the bucket that
// holds the ⌈q·n⌉-th; 0 for an empty histogram.
func (h Histogram) Quantile(q float64) time.Duration {
	n := h.Total()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for j, c := range h.Counts {
		seen += c
		if seen >= max(rank, 1) {
			return Middle(h.First + j)
		}
	}
	return Middle(h.First + len(h.Counts) - 1)
}

// Encode is h as the database keeps it: [First, counts…]; nil when empty.
func (h Histogram) Encode() []int64 {
	if len(h.Counts) == 0 {
		return nil
	}
	return append([]int64{int64(h.First)}, h.Counts...)
}

// Decode reads what Encode wrote.
func Decode(v []int64) Histogram {
	if len(v) < 2 {
		return Histogram{}
	}
	return Histogram{First: int(v[0]), Counts: slices.Clone(v[1:])}
}

// Millis is quantile q of h in milliseconds to the microsecond, or nil
// when h counts nothing.
func (h Histogram) Millis(q float64) *float64 {
	if h.Total() == 0 {
		return nil
	}
	v := math.Round(float64(h.Quantile(q).Microseconds())) / 1000
	return &v
}

// Sparkline draws values (nil: no data that hour) as an SVG path 96 wide
// and 24 high, the lowest at the bottom, broken where data is missing;
// span says the lowest and highest.
func Sparkline(values []*float64) (path, span string) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if v != nil {
			lo, hi = min(lo, *v), max(hi, *v)
		}
	}
	if math.IsInf(lo, 1) {
		return "", ""
	}
	var b []byte
	pen := false
	for i, v := range values {
		if v == nil {
			pen = false
			continue
		}
		y := 12.0
		if hi > lo {
			y = 22 - (*v-lo)/(hi-lo)*20
		}
		x := float64(i) * 96 / float64(len(values)-1)
		cmd := byte('L')
		if !pen {
			cmd = 'M'
			if i+1 >= len(values) || values[i+1] == nil {
				// A lone hour: a short stroke, so that it shows.
				b = fmt.Appendf(b, "M%.1f %.1fh2", x-1, y)
				pen = false
				continue
			}
		}
		b = fmt.Appendf(b, "%c%.1f %.1f", cmd, x, y)
		pen = true
	}
	return string(b), fmt.Sprintf("%.1f to %.1f ms", lo, hi)
}
