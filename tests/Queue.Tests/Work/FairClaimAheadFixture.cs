namespace Queue.Tests.Work;

/// <summary>
/// tenant-fair with claim-ahead for any filter, however rarely polled: the buffer fills after a couple of claims, so a
/// test can see what it hands out next.
/// </summary>
public sealed class FairClaimAheadFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Ordering:Policy"] = "tenant-fair",
        ["Claims:Prefetch"] = "64",
        ["Claims:PrefetchAboveCallsPerSecond"] = "0",
    };

    /// <summary>Claims one item <paramref name="n"/> times for <paramref name="task"/>; the job id of each answer, 0 for none.</summary>
    public async Task<List<long>> ClaimJobsAsync(string task, int n)
    {
        using var http = Worker();
        var jobs = new List<long>();
        for (var i = 0; i < n; i++)
        {
            var items = await ClaimAsync(http, new { worker = "fair", tasks = new[] { task }, max = 1, lease = 300 });
            jobs.Add(items.Length == 0 ? 0 : items[0].GetProperty("jobId").GetInt64());
        }
        return jobs;
    }
}
