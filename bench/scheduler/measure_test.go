package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// failingCreates makes the first len(errs) pod creates fail with errs, in order.
func failingCreates(errs ...error) (*fake.Clientset, *int) {
	client := fake.NewClientset()
	calls := 0
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls <= len(errs) {
			return true, nil, errs[calls-1]
		}
		return false, nil, nil
	})
	return client, &calls
}

func TestCreatePodRetriesStoreTimeouts(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	timeout := apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	cases := []struct {
		name      string
		errs      []error
		wantErr   bool
		wantCalls int
	}{
		{"timeout then created", []error{timeout}, false, 2},
		{"timeout, then it was committed after all", []error{timeout, apierrors.NewAlreadyExists(gr, "p")}, false, 2},
		{"a first AlreadyExists is a real clash", []error{apierrors.NewAlreadyExists(gr, "p")}, true, 1},
		{"a bad request is not retried", []error{apierrors.NewBadRequest("no")}, true, 1},
		{"gives up after 5 timeouts", []error{timeout, timeout, timeout, timeout, timeout}, true, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, calls := failingCreates(tc.errs...)
			err := createPod(context.Background(), client, benchPod("default", "p"))
			if (err != nil) != tc.wantErr || *calls != tc.wantCalls {
				t.Errorf("err %v after %d calls; want error %v after %d", err, *calls, tc.wantErr, tc.wantCalls)
			}
		})
	}
}

func TestReportShowsTheMedianRunAndEveryRate(t *testing.T) {
	run := func(pods int, elapsed time.Duration, p50 time.Duration) measurement {
		m := measurement{load: "1.0", elapsed: elapsed, revisionDelta: int64(3 * pods)}
		for range pods {
			m.latencies = append(m.latencies, p50)
		}
		return m
	}
	runs := []measurement{run(100, time.Second, time.Second), run(100, 2*time.Second, 2*time.Second), run(100, 4*time.Second, 4*time.Second)}
	got := markdown(options{nodes: 10, pods: 100, clients: 4}, runs)
	for _, want := range []string{
		"-runs 3", "pods/s in order: 100, 50, 25",
		"| pods/s, first creation to last bound | 50 |", "| time to bind, p50 | 2s |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
