import MerchantCore
// The MerchantServer module: the composition root of the merchant server.
//
// - Configuration/  the configuration file decoded, every field checked with its path (`ConfigurationProblem`),
//                   assembled into typed values: `OrderStoreLocation`, `ProcessorChoice`, the one `PublicURL`.
// - Application/    `MerchantServerConfiguration`, credentials and key loading (`MerchantCredential`), token opener
//                   assembly, `MerchantApplication` (a swift-service-lifecycle `Service`; its start-up steps in
//                   `StartUpSteps.swift`), `MerchantServerPlugin`.
// - Services/       swift-service-lifecycle services: the HTTP server, the reconciler, the subscription scheduler,
//                   the checkout pruner and the Wallet order pushes, shut down gracefully in reverse order;
//                   `ShutdownAction` for anything already running.
