package tables

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Printers of kinds whose columns are a field or two besides NAME and AGE.

func namespacePrinter() printer {
	return typed([]metav1.TableColumnDefinition{nameColumn(), column("Status", "The status of the namespace"), ageColumn()},
		func(ns *corev1.Namespace, now time.Time) metav1.TableRow {
			return cells(ns.Name, string(ns.Status.Phase), since(ns.CreationTimestamp, now))
		})
}

func configMapPrinter() printer {
	return typed([]metav1.TableColumnDefinition{nameColumn(), column("Data", corev1.ConfigMap{}.SwaggerDoc()["data"]), ageColumn()},
		func(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
			return cells(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), since(cm.CreationTimestamp, now))
		})
}

func secretPrinter() printer {
	doc := corev1.Secret{}.SwaggerDoc()
	return typed([]metav1.TableColumnDefinition{nameColumn(), column("Type", doc["type"]), column("Data", doc["data"]), ageColumn()},
		func(s *corev1.Secret, now time.Time) metav1.TableRow {
			return cells(s.Name, string(s.Type), int64(len(s.Data)), since(s.CreationTimestamp, now))
		})
}

func serviceAccountPrinter() printer {
	return typed([]metav1.TableColumnDefinition{nameColumn(), column("Secrets", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), ageColumn()},
		func(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
			return cells(sa.Name, int64(len(sa.Secrets)), since(sa.CreationTimestamp, now))
		})
}

func leasePrinter() printer {
	return typed([]metav1.TableColumnDefinition{nameColumn(), column("Holder", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), ageColumn()},
		func(l *coordinationv1.Lease, now time.Time) metav1.TableRow {
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return cells(l.Name, holder, since(l.CreationTimestamp, now))
		})
}

func csrPrinter() printer {
	spec := certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()
	return typed(
		[]metav1.TableColumnDefinition{
			nameColumn(), ageColumn(),
			column("SignerName", spec["signerName"]),
			column("Requestor", spec["request"]),
			column("RequestedDuration", spec["expirationSeconds"]),
			column("Condition", certificatesv1.CertificateSigningRequestStatus{}.SwaggerDoc()["conditions"]),
		},
		func(csr *certificatesv1.CertificateSigningRequest, now time.Time) metav1.TableRow {
			requested := "<none>"
			if s := csr.Spec.ExpirationSeconds; s != nil {
				requested = duration.HumanDuration(time.Duration(*s) * time.Second)
			}
			return cells(csr.Name, since(csr.CreationTimestamp, now), orNone(csr.Spec.SignerName), csr.Spec.Username, requested, csrCondition(csr))
		})
}

// csrCondition is Denied, Approved or Pending, then Failed and Issued when
// they apply: Denied wins over Approved.
func csrCondition(csr *certificatesv1.CertificateSigningRequest) string {
	has := map[certificatesv1.RequestConditionType]bool{}
	for _, c := range csr.Status.Conditions {
		has[c.Type] = true
	}
	status := "Pending"
	switch {
	case has[certificatesv1.CertificateDenied]:
		status = "Denied"
	case has[certificatesv1.CertificateApproved]:
		status = "Approved"
	}
	if has[certificatesv1.CertificateFailed] {
		status += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}
