package benche2e

import (
	"strings"
	"testing"
	"time"
)

// Lines as the controller writes them at debug level (internal/dataplane): a resync round,
// the change's round, an unchanged sync, the POST that carried the change.
const breakdownLog = `{"time":"2026-12-03T17:31:53.0Z","level":"DEBUG+3","msg":"round translated","logger":"sync","round":2,"event":"0001-01-01T00:00:00Z","roundStart":"2026-12-03T17:31:53.000Z","translateStart":"2026-12-03T17:31:53.001Z","translated":"2026-12-03T17:31:53.002Z"}
{"time":"2026-12-03T17:31:53.1Z","level":"DEBUG+3","msg":"configuration sent","gateway":"http://k","outcome":"pushed","bytes":10,"round":2,"syncStart":"2026-12-03T17:31:53.003Z","postStart":"2026-12-03T17:31:53.004Z","postWritten":"2026-12-03T17:31:53.005Z","postAnswered":"2026-12-03T17:31:53.006Z","connReused":true}
{"level":"INFO","msg":"something else","round":7}
{"time":"2026-12-03T17:31:54.0Z","level":"DEBUG+3","msg":"round translated","logger":"sync","round":3,"event":"2026-12-03T17:31:54.012Z","roundStart":"2026-12-03T17:31:54.013Z","translateStart":"2026-12-03T17:31:54.014Z","translated":"2026-12-03T17:31:54.016Z"}
{"time":"2026-12-03T17:31:54.1Z","level":"DEBUG+3","msg":"configuration sent","gateway":"http://k","outcome":"pushed","bytes":12,"round":3,"syncStart":"2026-12-03T17:31:54.020Z","postStart":"2026-12-03T17:31:54.021Z","postWritten":"2026-12-03T17:31:54.025Z","postAnswered":"2026-12-03T17:31:54.090Z","connReused":false}
`

func at(ms int) time.Time {
	return time.Date(2026, 12, 3, 17, 31, 54, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
}

// A change's stages are told from the benchmark's readings and the controller's lines: the
// POST Kong received it by, the first round after the Patch that took an event; they add up
// to the change's latency.
func TestStagesOfAChange(t *testing.T) {
	rounds, sent, err := readLoopLines(strings.NewReader(breakdownLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 2 || len(sent) != 2 {
		t.Fatalf("read %d rounds and %d POSTs, want 2 and 2", len(rounds), len(sent))
	}
	c := changeStamps{at: at(0), answered: at(10), kongBegan: at(22), kongAt: at(30)}
	s, ok := stagesOf(c, rounds, sent)
	if !ok {
		t.Fatal("the change was not told apart")
	}
	want := [8]time.Duration{10, 2, 1, 3, 4, 1, 1, 8}
	var sum time.Duration
	for i := range want {
		want[i] *= time.Millisecond
		sum += s.Stages[i]
	}
	if s.Stages != want {
		t.Errorf("stages %v, want %v", s.Stages, want)
	}
	if sum != c.kongAt.Sub(c.at) {
		t.Errorf("the stages add up to %s, the change took %s", sum, c.kongAt.Sub(c.at))
	}
	if s.Written != 4*time.Millisecond || s.ConnReused {
		t.Errorf("written %s, reused %t; want 4ms, false", s.Written, s.ConnReused)
	}

	// A change made after every round the log has: not told apart.
	if _, ok := stagesOf(changeStamps{at: at(100), answered: at(110), kongBegan: at(122), kongAt: at(130)}, rounds, sent); ok {
		t.Error("a change no round took was told apart")
	}
	// No debug lines: nothing.
	if _, ok := stagesOf(c, nil, nil); ok {
		t.Error("a change was told apart without the controller's lines")
	}
}

func TestParseCPUTimes(t *testing.T) {
	got := parseCPUTimes("cpu  8386048 322470 901946 6185651 18817 0 81423 449045 0 0")
	want := cpuTimes{total: 8386048 + 322470 + 901946 + 6185651 + 18817 + 81423 + 449045, idle: 6185651 + 18817, steal: 449045}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if parseCPUTimes("cpu0 1 2 3") != (cpuTimes{}) {
		t.Error("a line that is not the machine's was read")
	}
	from := cpuTimes{total: 1000, idle: 500, steal: 100}
	m := machineShare(from, cpuTimes{total: 2000, idle: 700, steal: 300})
	if m.Steal != 20 || m.Busy != 60 {
		t.Errorf("steal %.1f%%, busy %.1f%%; want 20 and 60", m.Steal, m.Busy)
	}
}

func TestEtcdSettings(t *testing.T) {
	for cmdline, want := range map[string]string{
		"/a/etcd --data-dir=/tmp/k8s_test_framework_1 --listen-peer-urls=http://x --unsafe-no-fsync=true": "data in /tmp/k8s_test_framework_1, --unsafe-no-fsync",
		"/a/etcd --data-dir=/dev/shm/x": "data in /dev/shm/x, fsync on",
		"":                              "data in ?, fsync on",
	} {
		if got := etcdSettings(cmdline); got != want {
			t.Errorf("etcdSettings(%q) = %q, want %q", cmdline, got, want)
		}
	}
}
