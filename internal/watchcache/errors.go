package watchcache

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// errTooOld is 410 Gone: the client must re-list.
func errTooOld(rv, oldest int64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest))
}

// errTooLarge is kube-apiserver's 504 for a revision the cache did not reach
// in time; client-go recognizes it by its cause and retries.
func errTooLarge(rv, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

func errBadRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// parseRV parses a non-empty, non-"0" resourceVersion.
func parseRV(s string) (int64, error) {
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, errBadRequest("invalid resource version %q", s)
	}
	return rv, nil
}

// inconsistentContinueMessage is kube-apiserver's (its etcd3 store's) for a
// continue token whose revision is gone.
const inconsistentContinueMessage = "The provided continue parameter is too old " +
	"to display a consistent list result. You can start a new list without " +
	"the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided " +
	"token results in an inconsistent list - objects that were created, " +
	"modified, or deleted between the time the first chunk was returned " +
	"and now may show up in the list."

// InconsistentContinue is kube-apiserver's 410 for a continue token whose
// revision is gone: it carries a token resuming at the same key from the
// latest state (revision -1).
func InconsistentContinue(key, prefix string) error {
	token, err := apistorage.EncodeContinue(key, prefix, -1)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	status := apierrors.NewResourceExpired(inconsistentContinueMessage)
	status.ErrStatus.ListMeta.Continue = token
	return status
}
