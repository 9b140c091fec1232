namespace Queue.Tests.Work;

/// <summary>
/// docs/CONTRACT.md "Ordering", as /next hands items out under <c>Ordering:Policy = seed</c> (one order for all tenants).
/// The fake clock starts in an even hour (smallest-first). The default policy runs the same tests in
/// Fairness/TenantFairOrderingClaimTests.
/// </summary>
public sealed class OrderingClaimTests(SeedClaimFixture fx) : OrderingClaimTestsBase<SeedClaimFixture>(fx), IClassFixture<SeedClaimFixture>;
