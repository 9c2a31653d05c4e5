package benche2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// A change's way to Kong, stage by stage: the benchmark's own clock readings (the Patch sent
// and answered, the recording Kong's reads) and the controller's debug log lines ("round
// translated" of the sync loop, "configuration sent" of a DB-less gateway), all of them wall
// clock readings of the same machine. The stages follow each other: their sum is the change's
// latency.

// Stage names, in the order a change goes through them.
var stageNames = []string{
	"Patch round trip (API server, etcd's commit)",
	"API answer -> controller saw the event",
	"event -> round start",
	"round: cache snapshot + translation",
	"translated -> sync start (gateway busy)",
	"sync start -> POST start (render)",
	"POST start -> Kong read the headers",
	"Kong headers -> Kong read the body",
}

// ChangeStages is one change's way to Kong: Stages[i] is the time spent in stageNames[i].
type ChangeStages struct {
	Stages [8]time.Duration
	// Written is from the POST's start to its body written into the connection (the
	// controller's side of the last two stages); ConnReused says whether the POST went out on
	// a kept-alive connection.
	Written    time.Duration
	ConnReused bool
}

// changeStamps are the benchmark's readings of one change.
type changeStamps struct {
	at, answered      time.Time // the Patch sent, its answer read
	kongBegan, kongAt time.Time // the push that carried it: headers read, body read
}

// loopLine is a debug line of the controller's that the breakdown reads.
type loopLine struct {
	Msg            string    `json:"msg"`
	Round          uint64    `json:"round"`
	Event          time.Time `json:"event"`
	RoundStart     time.Time `json:"roundStart"`
	TranslateStart time.Time `json:"translateStart"`
	Translated     time.Time `json:"translated"`
	Outcome        string    `json:"outcome"`
	SyncStart      time.Time `json:"syncStart"`
	PostStart      time.Time `json:"postStart"`
	PostWritten    time.Time `json:"postWritten"`
	ConnReused     bool      `json:"connReused"`
}

// readLoopLines reads the rounds and the sent configurations out of a controller log (empty
// when it was not written at debug level).
func readLoopLines(r io.Reader) (rounds, sent []loopLine, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		isRound, isSent := strings.Contains(string(line), `"msg":"round translated"`), strings.Contains(string(line), `"msg":"configuration sent"`)
		if !isRound && !isSent {
			continue
		}
		var l loopLine
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		if isRound {
			rounds = append(rounds, l)
		} else if l.Outcome == "pushed" && !l.PostStart.IsZero() {
			sent = append(sent, l)
		}
	}
	return rounds, sent, sc.Err()
}

// stagesOf is the way of the change c through the controller's rounds and sent
// configurations: the POST that Kong received it by (the last one started before Kong had its
// headers) and the first round after the Patch that took a change event, no later than the
// round that POST carried. False when they cannot be told (no debug log; a change taken by the
// round of an earlier one).
func stagesOf(c changeStamps, rounds, sent []loopLine) (ChangeStages, bool) {
	var s ChangeStages
	var post *loopLine
	for i := range sent {
		if !sent[i].PostStart.After(c.kongBegan) {
			post = &sent[i]
		}
	}
	if post == nil {
		return s, false
	}
	var round *loopLine
	for i := range rounds {
		r := &rounds[i]
		if !r.Event.IsZero() && !r.Event.Before(c.at) && r.Round <= post.Round {
			round = r
			break
		}
	}
	if round == nil {
		return s, false
	}
	marks := []time.Time{c.at, c.answered, round.Event, round.RoundStart, round.Translated, post.SyncStart, post.PostStart, c.kongBegan, c.kongAt}
	for i := range s.Stages {
		s.Stages[i] = marks[i+1].Sub(marks[i])
	}
	if !post.PostWritten.IsZero() {
		s.Written = post.PostWritten.Sub(post.PostStart)
	}
	s.ConnReused = post.ConnReused
	return s, true
}

// breakdown reads the controller's log and returns the stages of every change it can tell.
func breakdown(logFile string, changes []changeStamps) ([]ChangeStages, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rounds, sent, err := readLoopLines(f)
	if err != nil {
		return nil, err
	}
	var out []ChangeStages
	for _, c := range changes {
		if s, ok := stagesOf(c, rounds, sent); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// cpuTimes is the machine's "cpu" line of /proc/stat, in clock ticks.
type cpuTimes struct{ total, steal, idle uint64 }

// readCPUTimes reads /proc/stat's first line; zero when it cannot.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPUTimes(line)
}

// parseCPUTimes reads "cpu user nice system idle iowait irq softirq steal guest guest_nice"
// (guest time is already counted in user and nice).
func parseCPUTimes(line string) cpuTimes {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		t.total += v
		switch i {
		case 3, 4: // idle, iowait
			t.idle += v
		case 7:
			t.steal = v
		}
	}
	return t
}

// MachineShare is how the machine's CPU time went over a span, in percent of all of it.
type MachineShare struct {
	Steal, Busy float64 // taken by the host for others; used by this machine's processes
	Load1       string  // /proc/loadavg's one-minute average at the end
	// APIServerCPUSeconds and EtcdCPUSeconds are what the kube-apiserver and etcd used over
	// the span: the Patches, and whatever else the controller asked meanwhile (status writes).
	APIServerCPUSeconds, EtcdCPUSeconds float64
}

func machineShare(from, to cpuTimes) MachineShare {
	var m MachineShare
	if to.total > from.total {
		total := float64(to.total - from.total)
		m.Steal = 100 * float64(to.steal-from.steal) / total
		m.Busy = 100 * (total - float64(to.idle-from.idle) - float64(to.steal-from.steal)) / total
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load1, _, _ = strings.Cut(string(b), " ")
	}
	return m
}

// reportStages prints the stages' p50 and p90 over the changes.
func reportStages(w io.Writer, stages []ChangeStages, of int) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%6.1f", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(w, "change -> push by stage (%d of %d changes told apart; ms)   p50    p90    max\n", len(stages), of)
	column := func(pick func(ChangeStages) time.Duration) []time.Duration {
		ds := make([]time.Duration, len(stages))
		for i, s := range stages {
			ds[i] = pick(s)
		}
		return ds
	}
	row := func(name string, ds []time.Duration) {
		fmt.Fprintf(w, "  %-56s %s %s %s\n", name, ms(Percentile(ds, 50)), ms(Percentile(ds, 90)), ms(Percentile(ds, 100)))
	}
	for i, name := range stageNames {
		row(name, column(func(s ChangeStages) time.Duration { return s.Stages[i] }))
	}
	row("(POST start -> body written, the controller's side)", column(func(s ChangeStages) time.Duration { return s.Written }))
	reused := 0
	for _, s := range stages {
		if s.ConnReused {
			reused++
		}
	}
	fmt.Fprintf(w, "  POSTs on a kept-alive connection: %d of %d\n", reused, len(stages))
}
