import MerchantCore
// The MerchantServer module: the composition root of the merchant server.
//
// - Configuration/  the configuration file decoded, every field checked with its path (`ConfigurationProblem`),
//                   assembled into typed values: `OrderStoreLocation`, `ProcessorChoice`, the one `PublicURL`.
// - Application/    `MerchantServerConfiguration`, credentials and key loading (`MerchantCredential`), token opener
//                   assembly, `MerchantApplication` (start-up and shutdown), `MerchantServerPlugin`.
// - Services/       `Service` and `ServiceGroup`: the HTTP server, the reconciler, the subscription scheduler and the
//                   checkout pruner, started together and stopped together.
