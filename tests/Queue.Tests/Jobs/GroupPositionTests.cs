using System.Net;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>
/// Jobs created at the same moment share one transaction, and their first positions are read once for the whole
/// group (one dive and one walk that lists the jobs it passes). Each answer must still be its own exact position, the
/// same one GET /jobs/{id} reads alone. Alone in its database: every job counts. One group in flight at a time (see
/// <see cref="OneSubmissionFlushFixture"/>), so that the answers of different groups can be compared with each other.
/// </summary>
public sealed class GroupPositionTests(OneSubmissionFlushFixture fx) : IClassFixture<OneSubmissionFlushFixture>
{
    private const int Before = 5;
    private const int Together = 40;

    [Fact]
    public async Task Jobs_created_together_each_answer_their_own_exact_position_the_one_their_status_reads_alone()
    {
        var (_, key) = await fx.NewCustomerAsync(settings: new Queue.Core.Security.TenantSettings(["text"]));
        var http = fx.Api.ClientWithKey(key);
        for (var i = 0; i < Before; i++)
        {
            var job = await http.CreateJobAsync(OneDocument($"before-{i}"));
            Assert.Equal(i + 1, job.GetProperty("position").GetInt64());
        }

        var answers = await Task.WhenAll(Enumerable.Range(0, Together).Select(i => http.CreateJobAsync(OneDocument($"together-{i}"))));

        Assert.All(answers, a => Assert.True(a.GetProperty("positionExact").GetBoolean()));
        Assert.Equal(Enumerable.Range(Before + 1, Together).Select(p => (long)p), answers.Select(a => a.GetProperty("position").GetInt64()).Order());
        foreach (var a in answers)
        {
            using var r = await http.GetAsync(U($"/jobs/{a.GetProperty("id").GetInt64()}"));
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            var status = await r.BodyAsync();
            Assert.Equal(status.GetProperty("position").GetInt64(), a.GetProperty("position").GetInt64());
        }
    }

    private static object OneDocument(string name) => new
    {
        name,
        tasks = new[] { "text" },
        documents = new[] { new { name = name + ".txt", content = B64(name) } },
    };
}
