using System.Net;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using Microsoft.Extensions.DependencyInjection;
using Queue.Core.Jobs;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class EtaTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task The_eta_follows_recent_throughput_and_is_null_when_it_is_unknown()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.CreateJobAsync(new
        {
            name = "eta",
            tasks = new[] { "text", "ocr" },
            documents = Enumerable.Range(0, 10).Select(i => new { name = $"d{i}", content = B64("x") }).ToArray(),
        });
        Assert.Equal(System.Text.Json.JsonValueKind.Null, job.GetProperty("eta").ValueKind);

        // 600 completions in the last minute: 10 items/s, so 20 outstanding items take about 2 s.
        var meter = fx.Api.Services.GetRequiredService<ThroughputMeter>();
        var now = DateTimeOffset.UtcNow;
        meter.Record(now.AddSeconds(-60), 1000);
        meter.Record(now, 1600);
        var status = await (await http.GetAsync(U($"/jobs/{job.GetProperty("id").GetInt64()}"))).BodyAsync();
        var eta = status.GetProperty("eta").GetDateTime();
        Assert.InRange(eta, now.UtcDateTime.AddSeconds(1), now.UtcDateTime.AddSeconds(60));
    }
}
