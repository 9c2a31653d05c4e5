package benche2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStats is what Linux reports of a process: its resident memory now and at its peak, the
// anonymous (heap, stacks) and file-backed (the binary's pages read) parts of it now, and the
// CPU time it used.
type procStats struct {
	rss, hwm         int64
	rssAnon, rssFile int64
	cpuSeconds       float64
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100 on every Linux
// architecture Go supports.
const clockTicks = 100

func readProc(pid int) (procStats, error) {
	var out procStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			out.rss = kb * 1024
		case "VmHWM:":
			out.hwm = kb * 1024
		case "RssAnon:":
			out.rssAnon = kb * 1024
		case "RssFile:":
			out.rssFile = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return out, err
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return out, err
	}
	out.cpuSeconds = cpu
	return out, nil
}

// parseStatCPU reads utime and stime (fields 14 and 15) from /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may hold spaces, so fields are counted after its ')'.
func parseStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	return float64(utime+stime) / clockTicks, nil
}

// parseStatParent reads the command name (field 2) and the parent's pid (field 4) from
// /proc/<pid>/stat.
func parseStatParent(stat string) (name string, ppid int, err error) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 2 {
		return "", 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	ppid, err = strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, fmt.Errorf("unexpected /proc stat line %q", stat)
	}
	return stat[open+1 : end], ppid, nil
}

// childrenCPUSeconds is the CPU time (utime + stime) of this process's children named name:
// the benchmark's kube-apiserver, whose CPU the controller's lists cost too. 0 when none.
func childrenCPUSeconds(name string) float64 {
	total := 0.0
	for _, pid := range children(name) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if cpu, err := parseStatCPU(string(stat)); err == nil {
			total += cpu
		}
	}
	return total
}

// children are the pids of this process's children named name.
func children(name string) []int {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if n, ppid, err := parseStatParent(string(stat)); err == nil && ppid == self && n == name {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childCmdline is the command line of this process's child named name, its arguments
// separated by spaces; "" when there is none.
func childCmdline(name string) string {
	for _, pid := range children(name) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil {
			return strings.Join(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), " ")
		}
	}
	return ""
}

// etcdSettings says where etcd keeps its data and whether it syncs its writes, from its
// command line.
func etcdSettings(cmdline string) string {
	dir, fsync := "?", "fsync on"
	for _, arg := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(arg, "--data-dir="); ok {
			dir = v
		}
		if arg == "--unsafe-no-fsync" || arg == "--unsafe-no-fsync=true" {
			fsync = "--unsafe-no-fsync"
		}
	}
	return "data in " + dir + ", " + fsync
}
