package scheduler

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Reasons as kube-scheduler's InterPodAffinity filter words them.
const (
	reasonPodAffinity          = "node(s) didn't match pod affinity rules"
	reasonPodAntiAffinity      = "node(s) didn't match pod anti-affinity rules"
	reasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// namespaceLabels looks up a namespace's labels (nil when it is unknown),
// for terms that select namespaces by label.
type namespaceLabels func(name string) labels.Set

// affinityTerm is one required pod (anti-)affinity term, resolved for
// matching: the pods it selects and the topology they are counted in.
type affinityTerm struct {
	topologyKey string
	selector    labels.Selector
	// namespaces the term names; with nsSelector also those it selects.
	namespaces sets.Set[string]
	nsSelector labels.Selector
}

// requiredTerms resolves owner's required terms as kube-scheduler does: no
// namespaces and no namespace selector mean owner's own namespace, an empty
// namespace selector means every namespace, and matchLabelKeys and
// mismatchLabelKeys add owner's own label values to the selector.
func requiredTerms(owner *v1.Pod, terms []v1.PodAffinityTerm) ([]affinityTerm, error) {
	out := make([]affinityTerm, 0, len(terms))
	for i := range terms {
		t := &terms[i]
		selector, err := termSelector(owner, t)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: affinity term %d: %w", owner.Namespace, owner.Name, i, err)
		}
		term := affinityTerm{topologyKey: t.TopologyKey, selector: selector, namespaces: sets.New(t.Namespaces...)}
		if t.NamespaceSelector != nil {
			if term.nsSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				return nil, fmt.Errorf("pod %s/%s: affinity term %d: namespaceSelector: %w", owner.Namespace, owner.Name, i, err)
			}
		} else if len(t.Namespaces) == 0 {
			term.namespaces.Insert(owner.Namespace)
		}
		out = append(out, term)
	}
	return out, nil
}

// termSelector is the term's label selector (nil selects nothing) with
// owner's values for its matchLabelKeys (In) and mismatchLabelKeys (NotIn).
func termSelector(owner *v1.Pod, t *v1.PodAffinityTerm) (labels.Selector, error) {
	if t.LabelSelector == nil {
		return labels.Nothing(), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return nil, err
	}
	add := func(keys []string, op selection.Operator) error {
		for _, key := range keys {
			value, ok := owner.Labels[key]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(key, op, []string{value})
			if err != nil {
				return err
			}
			selector = selector.Add(*r)
		}
		return nil
	}
	if err := add(t.MatchLabelKeys, selection.In); err != nil {
		return nil, err
	}
	if err := add(t.MismatchLabelKeys, selection.NotIn); err != nil {
		return nil, err
	}
	return selector, nil
}

func (t *affinityTerm) matches(p *v1.Pod, nsLabels namespaceLabels) bool {
	if !t.namespaces.Has(p.Namespace) && (t.nsSelector == nil || !t.nsSelector.Matches(nsLabels(p.Namespace))) {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

func matchesAll(terms []affinityTerm, p *v1.Pod, nsLabels namespaceLabels) bool {
	for i := range terms {
		if !terms[i].matches(p, nsLabels) {
			return false
		}
	}
	return true
}

func requiredAffinity(p *v1.Pod) []v1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func requiredAntiAffinity(p *v1.Pod) []v1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// topologyPair is one topology domain: the nodes whose label key has value.
type topologyPair struct{ key, value string }

// placedPod is a pod counted on a node, as inter-pod checks see it.
type placedPod struct {
	pod  *v1.Pod
	node *v1.Node // nil while the node's object is unknown
}

// interPodCheck is kube-scheduler's InterPodAffinity filter for one pod in
// one cycle: the topology domains where pods it requires, or pods it
// refuses, run, and the domains where pods already placed refuse it.
type interPodCheck struct {
	affinity, anti []affinityTerm
	// affinityPairs counts, per domain of an affinity term, the pods there
	// that match all of the pod's affinity terms.
	affinityPairs map[topologyPair]int
	antiPairs     map[topologyPair]int
	// refusedPairs are the domains where a placed pod's required
	// anti-affinity selects the pod being scheduled.
	refusedPairs map[topologyPair]int
	refusedKeys  sets.Set[string] // the keys of refusedPairs
	// selfMatch lets the first pod of a group that requires its own kind
	// land anywhere the topology exists: no pod matches its terms yet, and
	// it matches them itself.
	selfMatch bool
}

// newInterPodCheck builds the check for pod over the placed pods. placed
// lists every counted pod; withAnti only those with required anti-affinity
// (the only placed pods that matter when pod itself has no terms). It
// returns nil when nothing constrains pod.
func newInterPodCheck(pod *v1.Pod, placed func(yield func(placedPod) bool), withAnti func(yield func(placedPod) bool), nsLabels namespaceLabels) (*interPodCheck, error) {
	affinity, err := requiredTerms(pod, requiredAffinity(pod))
	if err != nil {
		return nil, err
	}
	anti, err := requiredTerms(pod, requiredAntiAffinity(pod))
	if err != nil {
		return nil, err
	}
	if len(affinity) == 0 && len(anti) == 0 && isEmpty(withAnti) {
		return nil, nil // the common case, without allocating a thing
	}
	c := &interPodCheck{affinity: affinity, anti: anti,
		affinityPairs: map[topologyPair]int{}, antiPairs: map[topologyPair]int{}, refusedPairs: map[topologyPair]int{}, refusedKeys: sets.New[string]()}
	for p := range withAnti {
		if err := c.countRefusals(pod, p, nsLabels); err != nil {
			return nil, err
		}
	}
	if len(affinity) > 0 || len(anti) > 0 {
		for p := range placed {
			c.countMatches(p, nsLabels)
		}
	}
	if len(affinity) == 0 && len(anti) == 0 && len(c.refusedPairs) == 0 {
		return nil, nil
	}
	c.selfMatch = len(c.affinityPairs) == 0 && matchesAll(affinity, pod, nsLabels)
	return c, nil
}

func isEmpty(pods func(yield func(placedPod) bool)) bool {
	for range pods {
		return false
	}
	return true
}

// countRefusals records the domains where placed p's anti-affinity selects pod.
func (c *interPodCheck) countRefusals(pod *v1.Pod, p placedPod, nsLabels namespaceLabels) error {
	if p.node == nil || p.pod.UID == pod.UID {
		return nil
	}
	terms, err := requiredTerms(p.pod, requiredAntiAffinity(p.pod))
	if err != nil {
		return err
	}
	for i := range terms {
		if value, ok := p.node.Labels[terms[i].topologyKey]; ok && terms[i].matches(pod, nsLabels) {
			c.refusedPairs[topologyPair{terms[i].topologyKey, value}]++
			c.refusedKeys.Insert(terms[i].topologyKey)
		}
	}
	return nil
}

// countMatches records the domains where placed p satisfies the pod's
// affinity (all terms at once, as upstream counts) or violates its anti-affinity.
func (c *interPodCheck) countMatches(p placedPod, nsLabels namespaceLabels) {
	if p.node == nil {
		return
	}
	if len(c.affinity) > 0 && matchesAll(c.affinity, p.pod, nsLabels) {
		for i := range c.affinity {
			if value, ok := p.node.Labels[c.affinity[i].topologyKey]; ok {
				c.affinityPairs[topologyPair{c.affinity[i].topologyKey, value}]++
			}
		}
	}
	for i := range c.anti {
		if value, ok := p.node.Labels[c.anti[i].topologyKey]; ok && c.anti[i].matches(p.pod, nsLabels) {
			c.antiPairs[topologyPair{c.anti[i].topologyKey, value}]++
		}
	}
}

// reason says why the pod cannot go to node ("" when it can), in
// kube-scheduler's order: the pod's affinity, its anti-affinity, then the
// anti-affinity of pods already placed.
func (c *interPodCheck) reason(node *v1.Node) string {
	if c == nil {
		return ""
	}
	if !c.satisfiesAffinity(node) {
		return reasonPodAffinity
	}
	for i := range c.anti {
		if value, ok := node.Labels[c.anti[i].topologyKey]; ok && c.antiPairs[topologyPair{c.anti[i].topologyKey, value}] > 0 {
			return reasonPodAntiAffinity
		}
	}
	for key := range c.refusedKeys {
		if value, ok := node.Labels[key]; ok && c.refusedPairs[topologyPair{key, value}] > 0 {
			return reasonExistingAntiAffinity
		}
	}
	return ""
}

func (c *interPodCheck) satisfiesAffinity(node *v1.Node) bool {
	podsThere := true
	for i := range c.affinity {
		value, ok := node.Labels[c.affinity[i].topologyKey]
		if !ok {
			return false // every topology the pod names must exist on the node
		}
		if c.affinityPairs[topologyPair{c.affinity[i].topologyKey, value}] == 0 {
			podsThere = false
		}
	}
	return podsThere || c.selfMatch
}
