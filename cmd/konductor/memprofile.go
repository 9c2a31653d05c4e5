package main

import "runtime"

// stopMemoryProfileUnless turns the runtime's sampling of allocations off unless the heap
// profile can be read (--profiling serves /debug/pprof/heap): the linker leaves it on in any
// binary that links net/http/pprof, and its records (a hash table of 179,999 buckets and one
// record per allocating stack, never freed) held 1.5 MB of the process's memory at 3,000
// Ingresses (runtime.MemStats.BuckHashSys), for a profile nobody could fetch (issue #13,
// memory). The few allocations sampled before main ran stay recorded; nothing reads them.
func stopMemoryProfileUnless(profiling bool) {
	if !profiling {
		runtime.MemProfileRate = 0
	}
}
