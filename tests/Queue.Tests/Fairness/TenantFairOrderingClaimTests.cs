using Dapper;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>Every single-tenant ordering test of docs/CONTRACT.md again, with Ordering:Policy = tenant-fair: within one tenant the order is the seed's.</summary>
public sealed class TenantFairOrderingClaimTests(TenantFairFixture fx) : OrderingClaimTestsBase<TenantFairFixture>(fx), IClassFixture<TenantFairFixture>;
