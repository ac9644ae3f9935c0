package apiserver

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rbacResources is rbac.authorization.k8s.io/v1. The validation below
// re-expresses upstream's (k8s.io/kubernetes pkg/apis/rbac/validation,
// which is not importable as a library); privilege-escalation checks are
// admission's (internal/auth/rbac), since they need the requester's rules.
func rbacResources() []*resource {
	gv := rbacv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: gv.WithResource("roles"), kind: "Role", singular: "role", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.Role{} }, newList: func() runtime.Object { return &rbacv1.RoleList{} },
			rules: kindRules{name: pathSegmentName, validate: func(obj runtime.Object) field.ErrorList {
				return validateRules(obj.(*rbacv1.Role).Rules, true, field.NewPath("rules"))
			}},
		},
		{
			gvr: gv.WithResource("clusterroles"), kind: "ClusterRole", singular: "clusterrole",
			newObj: func() runtime.Object { return &rbacv1.ClusterRole{} }, newList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			rules: kindRules{name: pathSegmentName, validate: validateClusterRole},
		},
		{
			gvr: gv.WithResource("rolebindings"), kind: "RoleBinding", singular: "rolebinding", namespaced: true,
			newObj: func() runtime.Object { return &rbacv1.RoleBinding{} }, newList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			rules: bindingRules(func(obj runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject) {
				b := obj.(*rbacv1.RoleBinding)
				return &b.RoleRef, b.Subjects
			}, true),
		},
		{
			gvr: gv.WithResource("clusterrolebindings"), kind: "ClusterRoleBinding", singular: "clusterrolebinding",
			newObj:  func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			newList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			rules: bindingRules(func(obj runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject) {
				b := obj.(*rbacv1.ClusterRoleBinding)
				return &b.RoleRef, b.Subjects
			}, false),
		},
	}
}

func validateClusterRole(obj runtime.Object) field.ErrorList {
	role := obj.(*rbacv1.ClusterRole)
	errs := validateRules(role.Rules, false, field.NewPath("rules"))
	if agg := role.AggregationRule; agg != nil {
		path := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(agg.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range agg.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&agg.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, path.Index(i))...)
		}
	}
	return errs
}

// validateRules checks each rule names verbs and either resources (with
// their API groups) or, outside namespaces, non-resource URLs, never both.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := path.Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// bindingRules are a binding kind's rules; parts reads its roleRef and
// subjects. A RoleBinding may refer to a Role or a ClusterRole; a
// ClusterRoleBinding only to a ClusterRole. The roleRef never changes:
// to bind another role, delete and recreate (as upstream).
func bindingRules(parts func(runtime.Object) (*rbacv1.RoleRef, []rbacv1.Subject), namespaced bool) kindRules {
	roleKinds := []string{"ClusterRole"}
	if namespaced {
		roleKinds = append(roleKinds, "Role")
	}
	return kindRules{
		name: pathSegmentName,
		defaults: func(obj runtime.Object) {
			ref, subjects := parts(obj)
			if ref.APIGroup == "" {
				ref.APIGroup = rbacv1.GroupName
			}
			for i := range subjects {
				if subjects[i].APIGroup == "" && (subjects[i].Kind == rbacv1.UserKind || subjects[i].Kind == rbacv1.GroupKind) {
					subjects[i].APIGroup = rbacv1.GroupName
				}
			}
		},
		validate: func(obj runtime.Object) field.ErrorList {
			ref, subjects := parts(obj)
			errs := validateRoleRef(*ref, roleKinds, field.NewPath("roleRef"))
			for i, s := range subjects {
				errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
			}
			return errs
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			ref, _ := parts(obj)
			oldRef, _ := parts(old)
			if *ref != *oldRef {
				return field.ErrorList{field.Invalid(field.NewPath("roleRef"), *ref, "cannot change roleRef")}
			}
			return nil
		},
	}
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(path.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	for _, msg := range pathSegmentName(ref.Name, false) {
		errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
	}
	return errs
}

// validateSubject checks one subject. A ServiceAccount in a
// ClusterRoleBinding must say its namespace; in a RoleBinding it defaults
// to the binding's.
func validateSubject(s rbacv1.Subject, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(path.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(path.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}
