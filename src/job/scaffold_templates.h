#pragma once
// The texts `ootci init` writes (src/job/templates, compiled in by cmake/embed_text.cmake), with
// @DEVICE@ where the device name goes (scaffold.cc fills it in). @DEVICE@ rather than {device}:
// the generated ootci.yaml keeps gate's own `{device}` placeholder, and the workflow is full of
// `${{ }}`.

namespace ootci::scaffold_templates {

extern const char* const kWorkflow;           // .github/workflows/ootci.yml
extern const char* const kDiscoveryWorkflow;  // .github/workflows/ootci-discovery.yml
extern const char* const kSetupAction;        // .github/actions/setup-ootci/action.yml
extern const char* const kOotciYaml;          // ootci.yaml
extern const char* const kViewOpsConfig;      // configs/test_view_ops.yaml
extern const char* const kReadme;             // README.ootci.md

}  // namespace ootci::scaffold_templates
