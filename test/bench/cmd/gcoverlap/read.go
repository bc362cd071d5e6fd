package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// change is one timed change of the benchmark: its index, how long the benchmark timed
// it, and how much of its window in the trace a mark phase covered.
type change struct {
	index      int
	took       time.Duration
	start, end trace.Time
	marking    time.Duration
}

// markPhase is the name of the range the runtime traces while the collector marks.
const markPhase = "GC concurrent mark phase"

// read collects the changes the benchmark logged ("change" logs: "I start", "I end
// MICROS") and the mark phases, and measures their overlap.
func read(in io.Reader) ([]change, error) {
	r, err := trace.NewReader(in)
	if err != nil {
		return nil, err
	}
	var changes []change
	var open *change
	var marks [][2]trace.Time
	var markStart trace.Time
	for {
		ev, err := r.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind() {
		case trace.EventLog:
			if ev.Log().Category != "change" {
				continue
			}
			c, err := logged(ev, open)
			if err != nil {
				return nil, err
			}
			if open = c; c != nil && c.end != 0 {
				changes, open = append(changes, *c), nil
			}
		case trace.EventRangeBegin:
			if ev.Range().Name == markPhase {
				markStart = ev.Time()
			}
		case trace.EventRangeEnd:
			if ev.Range().Name == markPhase {
				marks = append(marks, [2]trace.Time{markStart, ev.Time()})
			}
		}
	}
	for i := range changes {
		changes[i].marking = overlap(changes[i], marks)
	}
	return changes, nil
}

// logged reads one "change" log: a start opens a change, an end closes the open one.
func logged(ev trace.Event, open *change) (*change, error) {
	f := strings.Fields(ev.Log().Message)
	if len(f) < 2 {
		return nil, fmt.Errorf("change log %q: want \"I start\" or \"I end MICROS\"", ev.Log().Message)
	}
	i, err := strconv.Atoi(f[0])
	if err != nil {
		return nil, fmt.Errorf("change log %q: %w", ev.Log().Message, err)
	}
	switch {
	case f[1] == "start":
		return &change{index: i, start: ev.Time()}, nil
	case f[1] == "end" && len(f) == 3 && open != nil && open.index == i:
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("change log %q: %w", ev.Log().Message, err)
		}
		open.end, open.took = ev.Time(), time.Duration(us)*time.Microsecond
		return open, nil
	}
	return nil, fmt.Errorf("change log %q does not close change %v", ev.Log().Message, open)
}

// overlap is how long the mark phases covered the change's window.
func overlap(c change, marks [][2]trace.Time) time.Duration {
	var sum time.Duration
	for _, m := range marks {
		if from, to := max(m[0], c.start), min(m[1], c.end); to > from {
			sum += time.Duration(to - from)
		}
	}
	return sum
}
