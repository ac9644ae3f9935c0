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
		selector, err := ownerSelector(owner, t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys)
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

// ownerSelector is an affinity term's or a spread constraint's label
// selector (nil selects nothing) with owner's own values for its
// matchLabelKeys (In) and mismatchLabelKeys (NotIn).
func ownerSelector(owner *v1.Pod, sel *metav1.LabelSelector, matchKeys, mismatchKeys []string) (labels.Selector, error) {
	if sel == nil {
		return labels.Nothing(), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
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
	if err := add(matchKeys, selection.In); err != nil {
		return nil, err
	}
	if err := add(mismatchKeys, selection.NotIn); err != nil {
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

func preferredAffinity(p *v1.Pod) []v1.WeightedPodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func preferredAntiAffinity(p *v1.Pod) []v1.WeightedPodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

func hasAffinityTerms(p *v1.Pod) bool {
	return len(requiredAffinity(p)) > 0 || len(requiredAntiAffinity(p)) > 0 ||
		len(preferredAffinity(p)) > 0 || len(preferredAntiAffinity(p)) > 0
}

// weightedTerm is a preferred term with its weight, negative for anti-affinity.
type weightedTerm struct {
	affinityTerm
	weight int64
}

// preferredTerms resolves owner's preferred affinity (weights as given) and
// anti-affinity (weights negated) terms.
func preferredTerms(owner *v1.Pod) ([]weightedTerm, error) {
	out, err := appendWeighted(nil, owner, preferredAffinity(owner), 1)
	if err != nil {
		return nil, err
	}
	return appendWeighted(out, owner, preferredAntiAffinity(owner), -1)
}

func appendWeighted(out []weightedTerm, owner *v1.Pod, weighted []v1.WeightedPodAffinityTerm, sign int64) ([]weightedTerm, error) {
	for i := range weighted {
		terms, err := requiredTerms(owner, []v1.PodAffinityTerm{weighted[i].PodAffinityTerm})
		if err != nil {
			return nil, err
		}
		out = append(out, weightedTerm{terms[0], sign * int64(weighted[i].Weight)})
	}
	return out, nil
}

// hardAffinityWeight is how much a placed pod's required affinity for the
// pod being scheduled counts in scoring: kube-scheduler's default
// hardPodAffinityWeight.
const hardAffinityWeight = 1

// topologyPair is one topology domain: the nodes whose label key has value.
type topologyPair struct{ key, value string }

// domainCounts counts something per topology domain, and knows the keys it has seen.
type domainCounts struct {
	counts map[topologyPair]int64
	keys   sets.Set[string]
}

func newDomainCounts() domainCounts {
	return domainCounts{counts: map[topologyPair]int64{}, keys: sets.New[string]()}
}

// add counts n in the domain of node the key names, if node has that label.
func (d domainCounts) add(key string, node *v1.Node, n int64) {
	if value, ok := node.Labels[key]; ok {
		d.counts[topologyPair{key, value}] += n
		d.keys.Insert(key)
	}
}

// at is the count in node's domain of key.
func (d domainCounts) at(key string, node *v1.Node) int64 {
	if value, ok := node.Labels[key]; ok {
		return d.counts[topologyPair{key, value}]
	}
	return 0
}

// sum adds up node's domains of every key seen.
func (d domainCounts) sum(node *v1.Node) int64 {
	var total int64
	for key := range d.keys {
		total += d.at(key, node)
	}
	return total
}

// placedPod is a pod counted on a node, as inter-pod checks see it.
type placedPod struct {
	pod  *v1.Pod
	node *v1.Node // nil while the node's object is unknown
}

// interPodCheck is kube-scheduler's InterPodAffinity filter and score for
// one pod in one cycle: the topology domains where pods it requires, or pods
// it refuses, run; the domains where pods already placed refuse it; and the
// weights of the preferences met in each domain.
type interPodCheck struct {
	affinity, anti []affinityTerm
	preferred      []weightedTerm
	// affinityPairs counts, per domain of an affinity term, the pods there
	// that match all of the pod's affinity terms.
	affinityPairs domainCounts
	antiPairs     domainCounts
	// refusedPairs are the domains where a placed pod's required
	// anti-affinity selects the pod being scheduled.
	refusedPairs domainCounts
	// preference sums, per domain, the weights of the preferred terms met
	// there: the pod's own, by the placed pods they select, and the placed
	// pods', where they select the pod (their required affinity counting
	// hardAffinityWeight).
	preference domainCounts
	// selfMatch lets the first pod of a group that requires its own kind
	// land anywhere the topology exists: no pod matches its terms yet, and
	// it matches them itself.
	selfMatch bool
}

// podTerms are a placed pod's own (anti-)affinity terms, parsed once, when
// the cache counts the pod, rather than in every cycle.
type podTerms struct {
	refusing, requiring []affinityTerm
	preferring          []weightedTerm
}

// newPodTerms parses p's terms; nil when it has none.
func newPodTerms(p *v1.Pod) (*podTerms, error) {
	if !hasAffinityTerms(p) {
		return nil, nil
	}
	refusing, err := requiredTerms(p, requiredAntiAffinity(p))
	if err != nil {
		return nil, err
	}
	requiring, err := requiredTerms(p, requiredAffinity(p))
	if err != nil {
		return nil, err
	}
	preferring, err := preferredTerms(p)
	if err != nil {
		return nil, err
	}
	return &podTerms{refusing: refusing, requiring: requiring, preferring: preferring}, nil
}

// placedWithTerms is a placed pod with its parsed terms.
type placedWithTerms struct {
	placedPod
	terms *podTerms
}

// newInterPodCheck builds the check for pod over the placed pods. placed
// lists every counted pod; withTerms only those with pod (anti)-affinity
// terms (the only placed pods that matter when pod itself has none). It
// returns nil when nothing concerns pod.
func newInterPodCheck(pod *v1.Pod, placed func(yield func(placedPod) bool), withTerms func(yield func(placedWithTerms) bool), nsLabels namespaceLabels) (*interPodCheck, error) {
	affinity, err := requiredTerms(pod, requiredAffinity(pod))
	if err != nil {
		return nil, err
	}
	anti, err := requiredTerms(pod, requiredAntiAffinity(pod))
	if err != nil {
		return nil, err
	}
	preferred, err := preferredTerms(pod)
	if err != nil {
		return nil, err
	}
	ownTerms := len(affinity) > 0 || len(anti) > 0 || len(preferred) > 0
	if !ownTerms && isEmpty(withTerms) {
		return nil, nil // the common case, without allocating a thing
	}
	c := &interPodCheck{affinity: affinity, anti: anti, preferred: preferred,
		affinityPairs: newDomainCounts(), antiPairs: newDomainCounts(), refusedPairs: newDomainCounts(), preference: newDomainCounts()}
	for p := range withTerms {
		c.countPlacedTerms(pod, p, nsLabels)
	}
	if ownTerms {
		for p := range placed {
			c.countMatches(p, nsLabels)
		}
	}
	c.selfMatch = len(c.affinityPairs.counts) == 0 && matchesAll(affinity, pod, nsLabels)
	return c, nil
}

func isEmpty[T any](pods func(yield func(T) bool)) bool {
	for range pods {
		return false
	}
	return true
}

// countPlacedTerms records what placed p's own terms say about pod: the
// domains its required anti-affinity closes, and the weights of its
// preferences (and required affinity) for pod.
func (c *interPodCheck) countPlacedTerms(pod *v1.Pod, p placedWithTerms, nsLabels namespaceLabels) {
	if p.node == nil || p.pod.UID == pod.UID {
		return
	}
	t := p.terms
	for i := range t.refusing {
		if t.refusing[i].matches(pod, nsLabels) {
			c.refusedPairs.add(t.refusing[i].topologyKey, p.node, 1)
		}
	}
	for i := range t.requiring {
		if t.requiring[i].matches(pod, nsLabels) {
			c.preference.add(t.requiring[i].topologyKey, p.node, hardAffinityWeight)
		}
	}
	for i := range t.preferring {
		if t.preferring[i].matches(pod, nsLabels) {
			c.preference.add(t.preferring[i].topologyKey, p.node, t.preferring[i].weight)
		}
	}
}

// countMatches records the domains where placed p satisfies the pod's
// affinity (all terms at once, as upstream counts), violates its
// anti-affinity, or meets its preferences.
func (c *interPodCheck) countMatches(p placedPod, nsLabels namespaceLabels) {
	if p.node == nil {
		return
	}
	if len(c.affinity) > 0 && matchesAll(c.affinity, p.pod, nsLabels) {
		for i := range c.affinity {
			c.affinityPairs.add(c.affinity[i].topologyKey, p.node, 1)
		}
	}
	for i := range c.anti {
		if c.anti[i].matches(p.pod, nsLabels) {
			c.antiPairs.add(c.anti[i].topologyKey, p.node, 1)
		}
	}
	for i := range c.preferred {
		if c.preferred[i].matches(p.pod, nsLabels) {
			c.preference.add(c.preferred[i].topologyKey, p.node, c.preferred[i].weight)
		}
	}
}

// preferenceScores scores the feasible nodes 0..100 by the preference
// weights met in their domains, scaled between the lowest and the highest
// as kube-scheduler's InterPodAffinity score is; nil when no preference
// applies.
func (c *interPodCheck) preferenceScores(nodes nodeList, feasible []int) []int64 {
	if c == nil || len(c.preference.keys) == 0 {
		return nil
	}
	raw := make([]int64, len(feasible))
	for i, at := range feasible {
		raw[i] = c.preference.sum(nodes.Node(at))
	}
	return scaleTo100(raw, false)
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
		if c.antiPairs.at(c.anti[i].topologyKey, node) > 0 {
			return reasonPodAntiAffinity
		}
	}
	if c.refusedPairs.sum(node) > 0 {
		return reasonExistingAntiAffinity
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
		if c.affinityPairs.counts[topologyPair{c.affinity[i].topologyKey, value}] == 0 {
			podsThere = false
		}
	}
	return podsThere || c.selfMatch
}
