package plan

import "strings"

// closest returns the candidate nearest to word by edit distance (with
// transpositions, ignoring case), if it is near enough to be a likely typo:
// one edit for words up to 5 characters, two up to 10, three beyond. Ties go
// to the earlier candidate.
func closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	limit := 3
	switch {
	case len(w) <= 5:
		limit = 1
	case len(w) <= 10:
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == word || abs(len(c)-len(w)) > limit {
			continue
		}
		if d := editDistance(w, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and adjacent transpositions.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
