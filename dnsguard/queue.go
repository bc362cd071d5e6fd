package dnsguard

import (
	"container/heap"
	"time"
)

// dueItem schedules one refresh of a name. An item whose seq no longer matches its
// entry's was superseded (or the name untracked) and is skipped when it comes up.
type dueItem struct {
	due  time.Time
	name string
	seq  uint64
}

// dueQueue is a min-heap of refreshes by due time.
type dueQueue []dueItem

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueItem)) }
func (q *dueQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

func (q *dueQueue) push(it dueItem) { heap.Push(q, it) }
func (q *dueQueue) pop() dueItem    { return heap.Pop(q).(dueItem) }
func (q dueQueue) peek() dueItem    { return q[0] }
