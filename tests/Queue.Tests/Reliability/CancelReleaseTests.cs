using System.Data;
using Dapper;
using Microsoft.Extensions.DependencyInjection;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>items taken but never handed out, given back after their job was cancelled, are cancelled too.</summary>
public sealed class CancelReleaseTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Items_claimed_ahead_or_leased_and_given_back_after_a_cancel_are_cancelled_and_the_job_settles(bool reservation)
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = (await http.CreateJobAsync(new
        {
            name = "cancelled-while-held",
            tasks = new[] { "text" },
            documents = Enumerable.Range(0, 3).Select(i => new { name = $"d{i}.txt", content = B64($"d{i}") }).ToArray(),
        })).GetProperty("id").GetInt64();
        var engine = fx.Api.Services.GetRequiredService<ClaimEngine>();
        var now = DateTime.UtcNow;
        var held = (await engine.ClaimAsync([new ClaimOrder(["text"],
            [new ClaimSlot(reservation ? null : "w", now.AddMinutes(5), reservation), new ClaimSlot(reservation ? null : "w", now.AddMinutes(5), reservation)])], default))[0];
        Assert.Equal(2, held.Count);

        (await http.DeleteAsync(U($"/jobs/{job}"))).EnsureSuccessStatusCode(); // the ready item is cancelled; the two held are not
        await fx.Api.Services.GetRequiredService<LeaseService>().ReleaseAsync(held, default);

        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job AND state <> 4", new { job }));
        Assert.Equal(3, await fx.CountAsync("SELECT items_cancelled FROM jobs WHERE id = @job AND state = 3", new { job }));
        var status = await (await http.GetAsync(U($"/jobs/{job}"))).BodyAsync();
        Assert.Equal(0, status.GetProperty("items").GetProperty("ready").GetInt64());
        Assert.Equal(3, status.GetProperty("items").GetProperty("cancelled").GetInt64());
    }
}
