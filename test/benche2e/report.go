package benche2e

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Percentile is the p-th percentile (0-100) of ds by the nearest-rank method; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Report prints the run's figures, one per line.
func (r Result) Report(w io.Writer, cfg Config) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	kong := "recording (no validation)"
	switch {
	case cfg.Database:
		kong = "emulator with a database (synced by diff; a push is a route's write)"
	case cfg.Emulator:
		kong = "emulator (validates)"
	}
	status := "off"
	if cfg.Status {
		status = "on"
	}
	fmt.Fprintf(w, "Ingresses %d, unrelated 100 KB Secrets %d, status writes %s, Kong %s\n", cfg.Ingresses, cfg.Secrets, status, kong)
	fmt.Fprintf(w, "etcd                            %s\n", r.Etcd)
	fmt.Fprintf(w, "setup (not measured)            %s\n", r.Setup.Round(time.Millisecond))
	fmt.Fprintf(w, "start -> first complete push    %s (controller CPU %.2f s, API server CPU %.2f s and %d collections, etcd CPU %.2f s; the API server fresh from the creations)\n",
		ms(r.StartToFirstPush), r.CPUSecondsAtFirstPush, r.APIServerCPUSecondsAtFirstPush, r.APIServerGCsAtFirstPush, r.EtcdCPUSecondsAtFirstPush)
	if cfg.Database {
		fmt.Fprintf(w, "start -> first sync complete    %s (the controller logged its first sync completed; the changes start after it)\n", ms(r.StartToFirstSync))
	}
	if cfg.Settle > 0 {
		fmt.Fprintf(w, "settled before it               %s (meanwhile API server CPU %.2f s, etcd CPU %.2f s)\n",
			cfg.Settle, r.SettleAPIServerCPUSeconds, r.SettleEtcdCPUSeconds)
	}
	fmt.Fprintf(w, "change -> push (%d of %d seen)  p50 %s  p90 %s  max %s\n", len(r.ChangeLatencies), len(r.ChangeLatencies)+r.Missed,
		ms(Percentile(r.ChangeLatencies, 50)), ms(Percentile(r.ChangeLatencies, 90)), ms(Percentile(r.ChangeLatencies, 100)))
	fmt.Fprintf(w, "machine during the changes      load %s, steal %.1f%%, busy %.1f%% of CPU time (/proc/stat); API server CPU %.2f s, etcd CPU %.2f s\n",
		r.ChangeMachine.Load1, r.ChangeMachine.Steal, r.ChangeMachine.Busy, r.ChangeMachine.APIServerCPUSeconds, r.ChangeMachine.EtcdCPUSeconds)
	if len(r.Stages) > 0 {
		reportStages(w, r.Stages, len(r.ChangeLatencies)+r.Missed)
	}
	fmt.Fprintf(w, "pushes                          %d (%d after the first complete one)\n", r.Pushes, r.PushesAfterFirst)
	if !cfg.Database {
		fmt.Fprintf(w, "POST /config body               %d bytes at the first complete push (%.2f MB), %d at the last\n",
			r.FirstBodyBytes, float64(r.FirstBodyBytes)/1e6, r.LastBodyBytes)
	}
	fmt.Fprintf(w, "RSS / peak                      %.0f MB / %.0f MB (now: anonymous %.0f MB, file-backed %.0f MB)\n",
		float64(r.RSSBytes)/(1<<20), float64(r.PeakRSSBytes)/(1<<20), float64(r.RSSAnonBytes)/(1<<20), float64(r.RSSFileBytes)/(1<<20))
	fmt.Fprintf(w, "CPU                             %.2f s\n", r.CPUSeconds)
	if n := len(r.ChangeLatencies) + r.Missed; n > 0 {
		fmt.Fprintf(w, "CPU after the first push        %.2f s (%.1f ms per change)\n", r.ChangeCPUSeconds, r.ChangeCPUSeconds*1000/float64(n))
	}
	if len(r.Unserved) > 0 {
		fmt.Fprintf(w, "requests the recording Kong does not serve: %v\n", r.Unserved)
	}
	fmt.Fprintf(w, "controller log                  %s\n", r.LogFile)
	var binaries []string
	for _, s := range r.StartSamples {
		if !slices.Contains(binaries, s.Binary) {
			binaries = append(binaries, s.Binary)
		}
	}
	for _, b := range binaries {
		var walls []time.Duration
		var line, cpus, peaks, apiCPUs, apiGCs, etcdCPUs string
		for _, s := range r.StartSamples {
			if s.Binary == b {
				walls = append(walls, s.FirstPush)
				line += " " + ms(s.FirstPush)
				cpus += fmt.Sprintf(" %.2f", s.CPUSeconds)
				peaks += fmt.Sprintf(" %.0f", float64(s.PeakRSS)/(1<<20))
				apiCPUs += fmt.Sprintf(" %.2f", s.APIServerCPUSeconds)
				etcdCPUs += fmt.Sprintf(" %.2f", s.EtcdCPUSeconds)
				apiGCs += fmt.Sprintf(" %d", s.APIServerGCs)
			}
		}
		fmt.Fprintf(w, "extra starts of %s: median %s; first push at%s; controller CPU s%s; API server CPU s%s; API server collections%s; etcd CPU s%s; peak RSS MB%s\n",
			b, ms(Percentile(walls, 50)), line, cpus, apiCPUs, apiGCs, etcdCPUs, peaks)
	}
}
