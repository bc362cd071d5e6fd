package crdvalidate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/operation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// kindValidator is one version of one CRD, compiled: the steps below follow
// apiextensions-apiserver's create path (decode with pruning and defaulting, then the
// custom resource strategy's PrepareForCreate and Validate) step by step.
type kindValidator struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	hasStatus  bool
	structural *structuralschema.Structural
	// embedded and lists are structural trimmed to where objectmeta's and listtype's
	// walks act (schema_trim.go); nil when nowhere.
	embedded, lists *structuralschema.Structural
	schema          *schemaWalk
	cel             *celWalk
}

func compile(crd *apiextensionsv1.CustomResourceDefinition, version *apiextensionsv1.CustomResourceDefinitionVersion, gvk schema.GroupVersionKind) (*kindValidator, error) {
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	structural = structural.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(structural); err != nil {
		return nil, err
	}
	_, openapi, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &kindValidator{
		gvk:        gvk,
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		hasStatus:  version.Subresources != nil && version.Subresources.Status != nil,
		structural: structural,
		embedded:   trimTo(structural, isEmbedded),
		lists:      trimTo(structural, isListSetOrMap),
		schema:     newSchemaWalk(openapi),
		cel:        newCELWalk(structural, celconfig.PerCallLimit),
	}, nil
}

// validate runs the create path on u, which it modifies.
func (k *kindValidator) validate(ctx context.Context, u *unstructured.Unstructured) error {
	if k.namespaced && u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	if err := k.decode(u); err != nil {
		return err
	}
	k.prepareForCreate(u)
	if errs := k.check(ctx, u); len(errs) > 0 {
		return apierrors.NewInvalid(k.gvk.GroupKind(), u.GetName(), errs)
	}
	return nil
}

// decode does what the API server's decoder does to a custom resource under strict field
// validation (kubectl's default): a field the schema lacks is an error; nulls the schema
// does not allow are dropped; defaults are applied.
func (k *kindValidator) decode(u *unstructured.Unstructured) error {
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return k.badRequest(err)
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, k.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, k.structural)
	ferr, embedded := schemaobjectmeta.CoerceWithOptions(nil, u.Object, k.embedded, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return k.badRequest(ferr)
	}
	if unknown = append(unknown, embedded...); len(unknown) > 0 {
		return k.badRequest(strictError(unknown))
	}
	structuraldefaulting.Default(u.Object, k.structural)
	return nil
}

// strictError is the decoder's error for fields the schema lacks.
func strictError(paths []string) error {
	errs := make([]error, len(paths))
	for i, p := range paths {
		errs[i] = fmt.Errorf(`unknown field "%s"`, p)
	}
	return runtime.NewStrictDecodingError(errs)
}

// badRequest is the API server's answer to a body it cannot decode.
func (k *kindValidator) badRequest(err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", k.gvk.Kind, k.gvk.Version, k.gvk.Kind, err))
}

// prepareForCreate drops what a create may not set: the status, when it is a subresource.
func (k *kindValidator) prepareForCreate(u *unstructured.Unstructured) {
	if k.hasStatus {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
}

// check is the custom resource strategy's Validate: metadata, the OpenAPI schema,
// embedded objects' metadata, list-type invariants, then the CEL rules unless an earlier
// error makes them meaningless (the API server skips them then, and says so).
func (k *kindValidator) check(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	errs := k.checkMeta(ctx, u)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), k.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, k.embedded, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.lists, u.Object)...)
	if blocking := blockingError(errs); blocking != nil {
		return append(errs, blocking)
	}
	celErrs, _ := k.cel.validate(ctx, u.Object, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

func (k *kindValidator) checkMeta(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	meta, _, err := schemaobjectmeta.GetObjectMeta(u.Object, false)
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), u.Object["metadata"], err.Error())}
	}
	return metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, meta, nil, k.namespaced,
		metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"), utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// blockingError is the API server's note when schema errors keep it from running the
// CEL rules (their inputs would not have the types the rules were compiled for).
func blockingError(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}
