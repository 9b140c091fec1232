namespace Queue.Tests.Work;

/// <summary>
/// <see cref="DirectClaimFixture"/> with <c>Ordering:Policy = seed</c>, set explicitly since tenant-fair became the default:
/// for the tests of docs/CONTRACT.md's order across all tenants and of the seed's explanations.
/// </summary>
public sealed class SeedClaimFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Ordering:Policy"] = "seed",
        ["Claims:Prefetch"] = "0",
    };
}
