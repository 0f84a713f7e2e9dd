package policy

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// benchCommands is a realistic mix of distinct commands: what plans run
// (builds, package installs, file edits, git, pipelines, nested shells),
// each made distinct by its arguments so no cache could answer twice.
func benchCommands(n int) []string {
	templates := []string{
		"go test ./pkg%d/...",
		"make -j4 target%d",
		"apt-get install -y pkg%d",
		"mkdir -p /tmp/work%d && cd /tmp/work%[1]d && tar -xzf ../src%[1]d.tar.gz",
		"git commit -am 'change %d' && git push origin main",
		"cat /var/log/app%d.log | grep -i error | sort | uniq -c | sort -rn | head -20",
		"echo \"build %d on $(hostname)\" > /tmp/agentic-hello/out%[1]d.txt",
		"sudo systemctl restart app%d",
		"rm -rf ./build%d",
		"bash -c 'cd /srv/app%d && ./deploy.sh --env prod'",
		"find . -name '*.tmp%d' -delete",
		"curl -fsS http://127.0.0.1:%d/health | grep ok",
		"for i in 1 2 3; do echo step%d-$i; sleep 0.1; done",
		"python3 manage.py migrate --database db%d",
		"docker run --rm -v $PWD:/src image%d make",
		"sed -i 's/version = .*/version = %d/' ./pyproject.toml",
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(templates[i%len(templates)], i)
	}
	return out
}

// BenchmarkJudge reports verdicts per second of the default policy on
// distinct commands (the judge has no cache: every verdict parses and
// judges anew): per second of wall time, and per second of this
// process's CPU time, the steadier figure on a shared machine.
func BenchmarkJudge(b *testing.B) {
	cmds := benchCommands(4096)
	p := Default()
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := p.Judge(cmds[i%len(cmds)]); v.Policy.Hash == "" {
			b.Fatal("no verdict")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verdicts/s")
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(b.N)/d.Seconds(), "verdicts/cpu-s")
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
