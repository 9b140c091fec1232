namespace Queue.Tests.Work;

/// <summary>
/// Claim-ahead for any filter, however rarely polled, no look for other processes' rows, and handouts written down
/// only after 1.5 s: long enough for a test to see a lease served from memory before its write, and for a finish to
/// come first.
/// </summary>
public sealed class HandoutFixture : WorkFixture
{
    public const int FlushMilliseconds = 1500;

    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Claims:Prefetch"] = "64",
        ["Claims:PrefetchAboveCallsPerSecond"] = "0",
        ["Claims:HandoutFlushMilliseconds"] = FlushMilliseconds.ToString(System.Globalization.CultureInfo.InvariantCulture),
        // The wake loop looks for other processes' new rows while the buffer holds items, and the jobs these tests
        // write straight into the database are such rows: seen between a test's second and third /next (under load),
        // they sent the third to a claim transaction that wrote its lease, where the test needs it served from memory.
        ["Claims:WakeMilliseconds"] = "60000",
    };
}
