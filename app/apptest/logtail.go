package apptest

import (
	"bytes"
	"sync"
)

// logTailLines is how many of a service's last log lines a failed test
// prints (the log is otherwise discarded: a passing test prints nothing).
const logTailLines = 400

// logTail keeps the last logTailLines lines written to it.
type logTail struct {
	mu    sync.Mutex
	lines [][]byte
	next  int
	full  bool
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if l.lines == nil {
			l.lines = make([][]byte, logTailLines)
		}
		l.lines[l.next] = bytes.Clone(line)
		l.next = (l.next + 1) % logTailLines
		if l.next == 0 {
			l.full = true
		}
	}
	return len(p), nil
}

// String is the kept lines, oldest first.
func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	if l.full {
		for _, line := range l.lines[l.next:] {
			b.Write(line)
		}
	}
	for _, line := range l.lines[:l.next] {
		b.Write(line)
	}
	return b.String()
}
