using Queue.Core.Data;
using Queue.Core.Ordering;
using Microsoft.Extensions.DependencyInjection;

namespace Queue.Tests.Work;

/// <summary>docs/CONTRACT.md "Ordering", as /next hands items out. The fake clock starts in an even hour (smallest-first).</summary>
public sealed class OrderingClaimTests(DirectClaimFixture fx) : OrderingClaimTestsBase<DirectClaimFixture>(fx), IClassFixture<DirectClaimFixture>;
