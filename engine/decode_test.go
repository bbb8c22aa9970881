package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// FuzzDecoder: whatever encoding/json decodes as an object, the Decoder
// decodes to the same value; what it refuses, the Decoder refuses.
func FuzzDecoder(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a": 1}`, `{"title": "Dune", "year": 1965, "tags": ["sf", "classic"], "stock": {"count": 4, "shelf": "A3"}}`,
		`{"e": "\u00e9\ud83d\ude00\n\"\\\/", "lone": "\ud800x", "n": -1.5e-7, "z": 0, "t": true, "f": false, "null": null}`,
		`{"nested": [[[{}]], [], {"a": [1, 2.5, "x"]}]}`, " \n{ \"a\" : [ 1 , 2 ] } \t", `{"bad": "\xff\xfe"}`,
		`[1]`, `{"a": 01}`, `{"a": }`, `{"a": 1,}`, `{"a" 1}`, `{"a": "x`, `{"a": tru}`, `{"a": 1} x`, `{"a":"\u12"}`, `{"a":"\q"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		wantErr := json.Unmarshal(data, &want)
		if wantErr == nil && want == nil {
			wantErr = errSyntax // "null" is not an object
		}
		got, err := NewDecoder().Object(data)
		if wantErr != nil {
			if err == nil {
				t.Fatalf("%q: decoded %v where encoding/json refuses: %v", data, got, wantErr)
			}
			if field, err := NewDecoder().Field(data, "a"); err == nil {
				t.Fatalf("%q: read field a as %v where encoding/json refuses: %v", data, field, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v where encoding/json decodes %v", data, err, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
		for key := range want {
			field, err := NewDecoder().Field(data, key)
			if err != nil || !reflect.DeepEqual(field, want[key]) {
				t.Fatalf("%q: field %q is %#v (%v), want %#v", data, key, field, err, want[key])
			}
		}
		if field, err := NewDecoder().Field(data, "\x00absent"); err != nil || field != nil {
			t.Fatalf("%q: an absent field is %#v (%v)", data, field, err)
		}
	})
}

// BenchmarkField reads one property of 100 records, as a FILTER after a
// FETCH does.
func BenchmarkField(b *testing.B) {
	var records [][]byte
	for i := range 100 {
		records = append(records, fmt.Appendf(nil, `{"tags": ["t%d"], "year": %d, "genre": %q, "title": "Book %d"}`, i%7, 1900+i, [...]string{"sf", "classic"}[i%2], i))
	}
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder()
		for _, r := range records {
			if _, err := d.Field(r, "genre"); err != nil {
				b.Fatal(err)
			}
		}
	}
}
