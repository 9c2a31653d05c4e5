package benche2e

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime 250, stime 50 ticks) after a command name with spaces and ')'.
	line := "1234 (my (odd) cmd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 12345 1000 200"
	got, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if got != 3.0 {
		t.Errorf("cpu = %v, want 3.0", got)
	}
	if _, err := parseStatCPU("garbage"); err == nil {
		t.Error("no error for a line without ')'")
	}
}

func TestReadProcSelf(t *testing.T) {
	st, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.rss <= 0 || st.hwm < st.rss {
		t.Errorf("rss %d, hwm %d", st.rss, st.hwm)
	}
	if st.rssAnon <= 0 || st.rssFile <= 0 || st.rssAnon+st.rssFile > st.rss+1<<20 {
		t.Errorf("rss %d: anonymous %d, file-backed %d", st.rss, st.rssAnon, st.rssFile)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {90, 9}, {100, 10}, {0, 1}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

// The recording Kong counts hosts until a complete configuration and marks awaited hosts.
func TestRecordingKongMarksChanges(t *testing.T) {
	k := newRecordingKong(nil, 2)
	k.record(time.Now(), time.Now(), []byte(`{"services":[{"routes":[{"hosts":["a.example.com"]}]}]}`))
	if _, ok := k.firstCompletePush(); ok {
		t.Fatal("one host of two counted as complete")
	}
	k.record(time.Now(), time.Now(), []byte(`{"services":[{"routes":[{"hosts":["a.example.com"]},{"hosts":["b.example.com"]}]}]}`))
	if _, ok := k.firstCompletePush(); !ok {
		t.Fatal("two hosts of two not complete")
	}
	k.await("c.example.com")
	k.record(time.Now(), time.Now(), []byte(`{"services":[{"routes":[{"hosts":["b.example.com"]}]}]}`))
	if !k.carriedAt("c.example.com").IsZero() {
		t.Fatal("host marked without a push carrying it")
	}
	k.record(time.Now(), time.Now(), []byte(`{"services":[{"routes":[{"hosts":["c.example.com"]}]}]}`))
	if k.carriedAt("c.example.com").IsZero() {
		t.Fatal("host not marked")
	}
	if k.pushCount() != 4 {
		t.Errorf("pushes = %d", k.pushCount())
	}
}

func TestParseStatParent(t *testing.T) {
	name, ppid, err := parseStatParent("4242 (kube apiserver) S 17 4242 17 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 12 0 100 0 0")
	if err != nil || name != "kube apiserver" || ppid != 17 {
		t.Fatalf("got %q, %d, %v", name, ppid, err)
	}
	if _, _, err := parseStatParent("garbage"); err == nil {
		t.Fatal("no error for a line without a command name")
	}
	if cpu := childrenCPUSeconds("no-such-child-process"); cpu != 0 {
		t.Fatalf("CPU of children that do not exist: %v", cpu)
	}
}

// The API server's collections are read out of its /metrics text.
func TestParseGCCount(t *testing.T) {
	metrics := "# HELP go_gc_duration_seconds A summary.\n# TYPE go_gc_duration_seconds summary\n" +
		"go_gc_duration_seconds{quantile=\"0\"} 1.2e-05\ngo_gc_duration_seconds_sum 0.01\ngo_gc_duration_seconds_count 33\ngo_goroutines 900\n"
	if got := parseGCCount(metrics); got != 33 {
		t.Fatalf("parseGCCount = %d, want 33", got)
	}
	if got := parseGCCount("go_goroutines 900\n"); got != -1 {
		t.Fatalf("parseGCCount without the metric = %d, want -1", got)
	}
}
