using Microsoft.Extensions.Time.Testing;
using Queue.Core.Security;
using Queue.Tests.Admin;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Reliability;

/// <summary>technician sign-in counts every guess, locks on the fifth failure in a row, and starts again after a lockout.</summary>
public sealed class AdminLoginTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    private const string Password = "the right password, long enough";

    private async Task<(TechnicianService Service, FakeTimeProvider Clock, string Login)> TechnicianAsync()
    {
        var clock = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var service = new TechnicianService(fx.DataSource, clock);
        var login = "tech-" + Guid.NewGuid().ToString("N")[..8];
        await service.CreateAsync(login, Password, default);
        return (service, clock, login);
    }

    [Fact]
    public async Task Four_wrong_passwords_leave_the_account_open_and_the_fifth_locks_it_even_against_the_right_one()
    {
        var (service, _, login) = await TechnicianAsync();

        for (var i = 0; i < TechnicianService.MaxFailures - 1; i++)
        {
            Assert.Equal(TechnicianSignIn.Failed, (await service.SignInAsync(login, "wrong", default)).Result);
        }
        Assert.Equal(TechnicianSignIn.LockedOut, (await service.SignInAsync(login, "wrong", default)).Result);
        Assert.Equal(TechnicianSignIn.LockedOut, (await service.SignInAsync(login, Password, default)).Result);
    }

    [Fact]
    public async Task Parallel_wrong_guesses_are_counted_one_after_another_so_only_four_are_answered_before_the_lock()
    {
        var (service, _, login) = await TechnicianAsync();

        var results = await Task.WhenAll(Enumerable.Range(0, 12).Select(_ => service.SignInAsync(login, "wrong", default)));

        Assert.Equal(TechnicianService.MaxFailures - 1, results.Count(r => r.Result == TechnicianSignIn.Failed));
        Assert.Equal(12 - (TechnicianService.MaxFailures - 1), results.Count(r => r.Result == TechnicianSignIn.LockedOut));
        Assert.Equal(TechnicianSignIn.LockedOut, (await service.SignInAsync(login, Password, default)).Result);
    }

    [Fact]
    public async Task After_a_lockout_runs_out_one_wrong_password_does_not_lock_the_account_again()
    {
        var (service, clock, login) = await TechnicianAsync();
        for (var i = 0; i < TechnicianService.MaxFailures; i++)
        {
            await service.SignInAsync(login, "wrong", default);
        }

        clock.Advance(TechnicianService.LockoutTime + TimeSpan.FromSeconds(1));

        Assert.Equal(TechnicianSignIn.Failed, (await service.SignInAsync(login, "wrong", default)).Result);
        Assert.Equal(TechnicianSignIn.Success, (await service.SignInAsync(login, Password, default)).Result);
    }

    [Fact]
    public async Task The_admin_cookies_are_https_only_unless_admin_allow_http_is_set()
    {
        await using var strict = new AdminFactory(fx.ConnectionString, allowHttp: false);
        await using var plain = new AdminFactory(fx.ConnectionString, allowHttp: true);

        static async Task<string> CookiesAsync(AdminFactory admin, string scheme)
        {
            using var client = admin.CreateClient(new Microsoft.AspNetCore.Mvc.Testing.WebApplicationFactoryClientOptions { BaseAddress = new Uri(scheme + "://localhost") });
            using var r = await client.GetAsync(new Uri("/Account/Login", UriKind.Relative));
            r.EnsureSuccessStatusCode();
            return string.Join("\n", r.Headers.GetValues("Set-Cookie"));
        }

        var strictCookies = await CookiesAsync(strict, "https");
        Assert.Contains("queue-admin-af", strictCookies, StringComparison.Ordinal);
        Assert.Contains("secure", strictCookies, StringComparison.OrdinalIgnoreCase);
        Assert.DoesNotContain("secure", await CookiesAsync(plain, "http"), StringComparison.OrdinalIgnoreCase);
    }
}
