package event

import (
	"fmt"
	"testing"
)

// TestScanTableAnswersAsAMap puts scans of several devices (the same scan
// ids on each, device and scan id swapped too) through growth and
// overwrites, and reads each back as a map per device answers.
func TestScanTableAnswersAsAMap(t *testing.T) {
	s := &State{}
	var tab scanTable
	want := map[[2]string]scanRef{}
	put := func(dev, id string, ref scanRef) {
		tab.put(s, scanDevHash(dev), dev, id, ref)
		want[[2]string{dev, id}] = ref
	}
	for i := 0; i < 5000; i++ {
		dev, id := fmt.Sprintf("d%d", i%7), fmt.Sprintf("s%d", i/7)
		if i%3 == 0 {
			dev, id = id, dev // (a, b) beside (b, a)
		}
		if i%2 == 0 {
			s.Door.Answers = append(s.Door.Answers, DeviceAnswer{DeviceID: dev, ScanAnswer: ScanAnswer{ScanID: id}})
			put(dev, id, scanRef{answer: int32(len(s.Door.Answers) - 1)})
			continue
		}
		r := &CheckinRec{ID: fmt.Sprint("c", i), Seq: len(s.CheckinOrder), DeviceID: dev, ScanID: id}
		s.CheckinOrder, s.mem.checkinList = append(s.CheckinOrder, r.ID), append(s.mem.checkinList, r)
		put(dev, id, scanRef{checkin: r, answer: -1})
	}
	// An answer recorded again for a scan id replaces the first.
	s.Door.Answers = append(s.Door.Answers, DeviceAnswer{DeviceID: "d1", ScanAnswer: ScanAnswer{ScanID: "s0"}})
	put("d1", "s0", scanRef{answer: int32(len(s.Door.Answers) - 1)})
	if tab.n != len(want) {
		t.Fatalf("%d slots in use, %d scans", tab.n, len(want))
	}
	for k, ref := range want {
		got, ok := tab.get(s, scanDevHash(k[0]), k[0], k[1])
		if !ok || got != ref {
			t.Fatalf("%v: got %+v %v, want %+v", k, got, ok, ref)
		}
	}
	for _, k := range [][2]string{{"d1", "s99999"}, {"d9", "s0"}, {"", "s0"}, {"s0", "d2"}} {
		if _, ok := want[k]; ok {
			continue
		}
		if got, ok := tab.get(s, scanDevHash(k[0]), k[0], k[1]); ok {
			t.Fatalf("%v: got %+v, none recorded", k, got)
		}
	}
}

// BenchmarkScanIDs is the door index's recorded scan ids as a batch of
// door-sync uses them: one lookup of each scan of a batch of 500 from one
// of 50 devices, then the batch's scans recorded, into tables of 125,000
// scans (a door-sync run), against the map per device they replaced. One
// op is one scan.
func BenchmarkScanIDs(b *testing.B) {
	const devices, batch, base = 50, 500, 125_000
	type scan struct {
		dev, id string
		ref     scanRef
	}
	mk := func(n int) (*State, []scan) {
		s := &State{}
		scans := make([]scan, 0, base+n+batch)
		for i := 0; i < base+n+batch; i++ {
			dev, id := fmt.Sprintf("dev_%d", (i/batch)%devices), fmt.Sprintf("s%d-%d", i/batch, i%batch)
			s.Door.Answers = append(s.Door.Answers, DeviceAnswer{DeviceID: dev, ScanAnswer: ScanAnswer{ScanID: id}})
			scans = append(scans, scan{dev, id, scanRef{answer: int32(len(s.Door.Answers) - 1)}})
		}
		return s, scans
	}
	b.Run("map-per-device", func(b *testing.B) {
		_, scans := mk(b.N)
		m := map[string]map[string]scanRef{}
		note := func(sc scan) {
			d := m[sc.dev]
			if d == nil {
				d = map[string]scanRef{}
				m[sc.dev] = d
			}
			d[sc.id] = sc.ref
		}
		for _, sc := range scans[:base] {
			note(sc)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			bs := scans[base+i : base+i+batch]
			rec := m[bs[0].dev]
			for _, sc := range bs {
				if _, ok := rec[sc.id]; ok {
					b.Fatal("recorded")
				}
			}
			for _, sc := range bs {
				note(sc)
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		s, scans := mk(b.N)
		var t scanTable
		for _, sc := range scans[:base] {
			t.put(s, scanDevHash(sc.dev), sc.dev, sc.id, sc.ref)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i += batch {
			bs := scans[base+i : base+i+batch]
			dev := scanDevHash(bs[0].dev)
			for _, sc := range bs {
				if _, ok := t.get(s, dev, sc.dev, sc.id); ok {
					b.Fatal("recorded")
				}
			}
			for _, sc := range bs {
				t.put(s, dev, sc.dev, sc.id, sc.ref)
			}
		}
	})
}
