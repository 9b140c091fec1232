namespace Queue.Tests.Work;

/// <summary>
/// Claim-ahead for any filter, however rarely polled, and handouts written down only after 1.5 s: long enough for a
/// test to see a lease served from memory before its write, and for a finish to come first.
/// </summary>
public sealed class HandoutFixture : WorkFixture
{
    public const int FlushMilliseconds = 1500;

    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Claims:Prefetch"] = "64",
        ["Claims:PrefetchAboveCallsPerSecond"] = "0",
        ["Claims:HandoutFlushMilliseconds"] = FlushMilliseconds.ToString(System.Globalization.CultureInfo.InvariantCulture),
    };
}
