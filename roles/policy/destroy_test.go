package policy

import "testing"

// destroySpellings are 89 spellings of one destructive effect — the
// directory /srv/data (or a home directory) deleted, emptied or made
// unreadable — built from the effect table of docs/policy.md: rm's own
// spellings, chaining, find, rsync, git, tar, mv to /dev/null, chmod -R
// 000, dd of=, truncation, redirections, wrappers that run a command
// string, and interpreters with options before their inline code. Each
// must be gated or denied under the notes' compact policy and under the
// default policy; want is what the explanation must name.
var destroySpellings = []bypass{
	// rm's own spellings.
	{"rm -r /srv/data", "recursive delete"},
	{"rm -R /srv/data", "recursive delete"},
	{"rm --recursive /srv/data", "recursive delete"},
	{"rm -rv /srv/data", "recursive delete"},
	{"rm -dr /srv/data", "recursive delete"},
	{"rm -r -- ~/notes", "rm -r -- ~/notes"},
	{"/usr/bin/rm -r /srv/data", "recursive delete"},
	// Chaining and grouping.
	{"cd /srv && rm -r data", "recursive delete"},
	{"true; rm -r /srv/data", "recursive delete"},
	{"ls || rm -r /srv/data", "recursive delete"},
	{"(cd /srv; rm -r data)", "recursive delete"},
	{"{ rm -r /srv/data; }", "recursive delete"},
	{"if [ -d /srv/data ]; then rm -r /srv/data; fi", "recursive delete"},
	{`for d in /srv/data; do rm -r "$d"; done`, `rm -r "$d"`},
	{"x=$(rm -r /srv/data)", "$( )"},
	// find.
	{"find /srv/data -delete", "find -delete"},
	{"find /srv/data -mindepth 1 -delete", "find -delete"},
	{"find /srv/data -type f -delete", "find -delete"},
	{"find /srv/data -name '*' -delete", "find -delete"},
	{"find /srv/data -exec rm {} +", "find -exec"},
	{`find /srv/data -exec rm -r {} \;`, "find -exec"},
	{`find /srv/data -depth -execdir rm -f {} \;`, "find -execdir"},
	{`find /srv/data -exec unlink {} \;`, "find -exec"},
	{"find /srv/data -exec shred -u {} +", "find -exec"},
	{"find /srv/data -print0 | xargs -0 rm -f", "xargs"},
	{"find ~/notes -depth -print | xargs rm -d", "xargs"},
	// rsync, git, tar.
	{"rsync -a --delete /tmp/empty/ /srv/data/", "rsync --delete"},
	{"rsync -r --delete-before empty/ /srv/data/", "rsync --delete-before"},
	{"rsync -a --del /tmp/empty/ /srv/data/", "rsync --del"},
	{"rsync --recursive --delete-after /tmp/e/ /srv/data", "rsync --delete-after"},
	{"rsync -a --remove-source-files /srv/data/ /tmp/x/", "rsync --remove-source-files"},
	{"git -C /srv/data clean -fdx", "git clean"},
	{"cd /srv/data && git clean -d --force", "git clean"},
	{"tar -cf /dev/null --remove-files /srv/data", "tar --remove-files"},
	// mv to /dev/null.
	{"mv /srv/data /dev/null", "mv to /dev/null"},
	{"mv -f /srv/data/db.sqlite /dev/null", "mv to /dev/null"},
	{"mv -t /dev/null /srv/data", "mv to /dev/null"},
	// chmod -R 000.
	{"chmod -R 000 /srv/data", "chmod"},
	{"chmod --recursive 0 /srv/data", "chmod"},
	{"chmod -R a-rwx /srv/data", "chmod"},
	{"chmod 000 -R /srv/data", "chmod"},
	// dd of=.
	{"dd if=/dev/zero of=/srv/data/db.sqlite", "dd"},
	{"dd if=/dev/urandom of=/srv/data/db bs=1M count=10 conv=notrunc", "dd"},
	{"sudo dd of=/srv/data/db < /dev/zero", "dd"},
	// Truncation.
	{"truncate -s 0 /srv/data/db.sqlite", "truncate"},
	{"truncate --size=0 /srv/data/db", "truncate"},
	{": > /srv/data/db.sqlite", "/srv/data/db.sqlite"},
	{"> /srv/data/db.sqlite", "/srv/data/db.sqlite"},
	{"cat /dev/null > /srv/data/db.sqlite", "/srv/data/db.sqlite"},
	{"cp /dev/null /srv/data/db.sqlite", "/srv/data/db.sqlite"},
	{"true > /srv/data/db", "/srv/data/db"},
	{"echo -n > /srv/data/db", "/srv/data/db"},
	{"printf '' > /srv/data/db", "/srv/data/db"},
	{"shred -u /srv/data/db", "shred"},
	// Redirections.
	{"rm -r /srv/data 2>/dev/null", "recursive delete"},
	{"rm -r /srv/data >/dev/null 2>&1 &", "recursive delete"},
	{"bash <<< 'rm -r /srv/data'", "here-document"},
	{"sh <<'EOF'\nfind /srv/data -delete\nEOF", "here-document"},
	{"sh < /tmp/cleanup.sh", "sh reads its script"},
	// Wrappers and programs that run a command string.
	{"sudo rm -r /srv/data", "inside sudo"},
	{"env rm -r /srv/data", "inside env"},
	{"nice -n 19 find /srv/data -delete", "inside nice"},
	{"timeout 60 rsync -a --delete /tmp/e/ /srv/data/", "inside timeout"},
	{"nohup rm -r /srv/data &", "inside nohup"},
	{"xargs rm -r <<< /srv/data", "inside xargs"},
	{"flock /tmp/l -c 'rm -r /srv/data'", "flock -c"},
	{"flock -w 5 /tmp/l rm -r /srv/data", "inside flock"},
	{"flock /tmp/l --command 'find /srv/data -delete'", "flock -c"},
	{"watch -n 60 'rm -r /srv/data'", "watch"},
	{"bash -c 'find /srv/data -delete'", "bash -c"},
	{"eval 'rm -r /srv/data'", "eval"},
	{"su -c 'rm -r /srv/data' app", "su -c"},
	{"script -qc 'rm -r /srv/data' /dev/null", "script -c"},
	{"git -c core.pager='rm -r /srv/data' log", "core.pager"},
	{"gdb -batch -ex 'shell rm -r /srv/data'", "gdb -ex"},
	{"gdb -q -ex '!rm -r /srv/data' -ex quit", "gdb -ex"},
	{"sed -n '1e rm -r /srv/data' /etc/hostname", "sed e"},
	{`sed 's/.*/rm -r \/srv\/data/e' <<< x`, "sed"},
	{"parallel rm -r ::: /srv/data", "parallel"},
	{"parallel 'rm -r {}' ::: /srv/data", "parallel"},
	{"setsid -f rm -r /srv/data", "inside setsid"},
	{"vim -es -c '!rm -r /srv/data' -c q", "vim"},
	// Interpreters with options before the inline code.
	{`perl -MFile::Path=rmtree -e 'rmtree("/srv/data")'`, "perl -e"},
	{`python3 -W ignore -c 'import shutil; shutil.rmtree("/srv/data")'`, "python3 -c"},
	{`node -r fs -e 'fs.rmSync("/srv/data", {recursive: true})'`, "node -e"},
	{`ruby -r fileutils -e 'FileUtils.rm_rf("/srv/data")'`, "ruby -e"},
	{`php -d x=1 -r 'system("rm -r /srv/data");'`, "php -r"},
	{`lua -l os -e 'os.execute("rm -r /srv/data")'`, "lua -e"},
	{`pypy3 -X dev -c 'import shutil; shutil.rmtree("/srv/data")'`, "pypy3 -c"},
}

func TestDestroySpellingsCompact(t *testing.T) {
	judgeCorpus(t, loadCompact(t), destroySpellings)
}

func TestDestroySpellingsDefault(t *testing.T) {
	judgeCorpus(t, Default(), destroySpellings)
}

func TestDestroySpellingsCount(t *testing.T) {
	if len(destroySpellings) != 89 {
		t.Fatalf("the corpus has %d spellings of the destructive command, want the probe's 89", len(destroySpellings))
	}
	seen := map[string]bool{}
	for _, b := range destroySpellings {
		if seen[b.cmd] {
			t.Errorf("%q is in the corpus twice", b.cmd)
		}
		seen[b.cmd] = true
	}
}
