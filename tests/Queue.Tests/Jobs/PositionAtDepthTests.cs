using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Jobs;

/// <summary>
/// docs/CONTRACT.md "GET /jobs/{id}" (position at depth): exact while at most 1,000 claimable jobs are ahead, an estimate beyond with
/// positionExact false. Alone in its database: every job counts.
/// </summary>
public sealed class PositionAtDepthTests(DepthFixture fx) : IClassFixture<DepthFixture>
{
    private const int Jobs = DepthFixture.Jobs;
    private readonly List<long> ids = fx.Ids;
    private readonly string key = fx.Key;

    [Fact]
    public async Task Positions_up_to_1000_jobs_ahead_are_exact_and_deeper_ones_are_flagged_estimates_close_to_the_truth()
    {
        var tenth = await StatusAsync(ids[9]);
        Assert.Equal(10, tenth.GetProperty("position").GetInt64());
        Assert.True(tenth.GetProperty("positionExact").GetBoolean());

        var edge = await StatusAsync(ids[1000]); // exactly 1,000 ahead
        Assert.Equal(1001, edge.GetProperty("position").GetInt64());
        Assert.True(edge.GetProperty("positionExact").GetBoolean());

        var deep = await StatusAsync(ids[Jobs - 1]);
        Assert.False(deep.GetProperty("positionExact").GetBoolean());
        Assert.InRange(deep.GetProperty("position").GetInt64(), 1_200, 1_800);
    }

    [Fact]
    public async Task Explain_of_a_deep_job_estimates_the_jobs_ahead_instead_of_counting_them_all()
    {
        using var http = Customer();
        using var r = await http.GetAsync(new Uri($"/jobs/{ids[Jobs - 1]}/explain", UriKind.Relative));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var e = await r.Content.ReadFromJsonAsync<JsonElement>();
        Assert.False(e.GetProperty("positionExact").GetBoolean());
        Assert.InRange(e.GetProperty("jobsAhead").GetInt64(), 1_200, 1_800);

        using var shallow = await http.GetAsync(new Uri($"/jobs/{ids[4]}/explain", UriKind.Relative));
        var s = await shallow.Content.ReadFromJsonAsync<JsonElement>();
        Assert.True(s.GetProperty("positionExact").GetBoolean());
        Assert.Equal(4, s.GetProperty("jobsAhead").GetInt64());
    }

    private HttpClient Customer()
    {
        var http = fx.Api.CreateClient();
        http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", key);
        return http;
    }

    private async Task<JsonElement> StatusAsync(long jobId)
    {
        using var http = Customer();
        using var r = await http.GetAsync(new Uri($"/jobs/{jobId}", UriKind.Relative));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        return await r.Content.ReadFromJsonAsync<JsonElement>();
    }
}
