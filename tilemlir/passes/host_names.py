"""Names the C and C++ headers of emitted MACA C++ declare at global scope.

A host launcher is an `extern "C"` function of the emitted source, so a user
function called `printf`, `memcpy` or `time` would redeclare (or, for `main`,
replace) a name of the C library; C++ then refuses the source, or the program
links the wrong function. `symbols.kernel_symbol` mangles every name here.

This is the list g++ 12.2 with glibc 2.36 (Debian 12, the project's toolchain)
declares at global scope -- functions, variables, typedefs, tags -- for the
headers the prelude and the CPU harness include (<cstdint> <cstdio> <cmath>
<cstdlib> <cstring> <atomic> <barrier> <thread> <memory> <functional> <vector>
<exception> <type_traits> <utility>), less C++ keywords and names reserved to the
implementation (`__x`, `_X`). test/python/test_symbols.py
(`test_no_global_name_of_the_host_headers_stays_plain`) re-derives it from the
installed headers and names any declaration a toolchain adds.
"""

from __future__ import annotations

_DECLARED = """
FILE _exit _pthread_cleanup_buffer _tolower _toupper a64l abort abs access acct acos acosf
acosf128 acosf32 acosf32x acosf64 acosf64x acosh acoshf acoshf128 acoshf32 acoshf32x acoshf64
acoshf64x acoshl acosl adjtime alarm aligned_alloc alloca arc4random arc4random_buf
arc4random_uniform asctime asctime_r asin asinf asinf128 asinf32 asinf32x asinf64 asinf64x asinh
asinhf asinhf128 asinhf32 asinhf32x asinhf64 asinhf64x asinhl asinl asprintf at_quick_exit atan
atan2 atan2f atan2f128 atan2f32 atan2f32x atan2f64 atan2f64x atan2l atanf atanf128 atanf32
atanf32x atanf64 atanf64x atanh atanhf atanhf128 atanhf32 atanhf32x atanhf64 atanhf64x atanhl
atanl atexit atof atoi atol atoll basename bcmp bcopy blkcnt64_t blkcnt_t blksize_t brk bsearch
btowc bzero caddr_t calloc canonicalize canonicalize_file_name canonicalizef canonicalizef128
canonicalizef32 canonicalizef32x canonicalizef64 canonicalizef64x canonicalizel cbrt cbrtf
cbrtf128 cbrtf32 cbrtf32x cbrtf64 cbrtf64x cbrtl ceil ceilf ceilf128 ceilf32 ceilf32x ceilf64
ceilf64x ceill chdir chown chroot clearenv clearerr clearerr_unlocked clock clock_adjtime
clock_getcpuclockid clock_getres clock_gettime clock_nanosleep clock_settime clock_t clockid_t
clone close close_range closefrom comparison_fn_t confstr cookie_io_functions_t copy_file_range
copysign copysignf copysignf128 copysignf32 copysignf32x copysignf64 copysignf64x copysignl cos
cosf cosf128 cosf32 cosf32x cosf64 cosf64x cosh coshf coshf128 coshf32 coshf32x coshf64 coshf64x
coshl cosl cpu_set_t crypt ctermid ctime ctime_r cuserid daddl daddr_t daemon daylight ddivl
dev_t dfmal difftime div div_t dmull double_t dprintf drand48 drand48_data drand48_r drem dremf
dreml dsqrtl dsubl dup dup2 dup3 duplocale dysize eaccess ecvt ecvt_r endusershell environ
erand48 erand48_r erf erfc erfcf erfcf128 erfcf32 erfcf32x erfcf64 erfcf64x erfcl erff erff128
erff32 erff32x erff64 erff64x erfl error_t euidaccess execl execle execlp execv execve execveat
execvp execvpe exit exp exp10 exp10f exp10f128 exp10f32 exp10f32x exp10f64 exp10f64x exp10l exp2
exp2f exp2f128 exp2f32 exp2f32x exp2f64 exp2f64x exp2l expf expf128 expf32 expf32x expf64
expf64x expl explicit_bzero expm1 expm1f expm1f128 expm1f32 expm1f32x expm1f64 expm1f64x expm1l
f32addf128 f32addf32x f32addf64 f32addf64x f32divf128 f32divf32x f32divf64 f32divf64x f32fmaf128
f32fmaf32x f32fmaf64 f32fmaf64x f32mulf128 f32mulf32x f32mulf64 f32mulf64x f32sqrtf128
f32sqrtf32x f32sqrtf64 f32sqrtf64x f32subf128 f32subf32x f32subf64 f32subf64x f32xaddf128
f32xaddf64 f32xaddf64x f32xdivf128 f32xdivf64 f32xdivf64x f32xfmaf128 f32xfmaf64 f32xfmaf64x
f32xmulf128 f32xmulf64 f32xmulf64x f32xsqrtf128 f32xsqrtf64 f32xsqrtf64x f32xsubf128 f32xsubf64
f32xsubf64x f64addf128 f64addf64x f64divf128 f64divf64x f64fmaf128 f64fmaf64x f64mulf128
f64mulf64x f64sqrtf128 f64sqrtf64x f64subf128 f64subf64x f64xaddf128 f64xdivf128 f64xfmaf128
f64xmulf128 f64xsqrtf128 f64xsubf128 fabs fabsf fabsf128 fabsf32 fabsf32x fabsf64 fabsf64x fabsl
faccessat fadd faddl fchdir fchown fchownat fclose fcloseall fcvt fcvt_r fd_mask fd_set
fdatasync fdim fdimf fdimf128 fdimf32 fdimf32x fdimf64 fdimf64x fdiml fdiv fdivl fdopen feof
feof_unlocked ferror ferror_unlocked fexecve fflush fflush_unlocked ffma ffmal ffs ffsl ffsll
fgetc fgetc_unlocked fgetpos fgetpos64 fgets fgets_unlocked fgetwc fgetwc_unlocked fgetws
fgetws_unlocked fileno fileno_unlocked finite finitef finitel float_t flockfile floor floorf
floorf128 floorf32 floorf32x floorf64 floorf64x floorl fma fmaf fmaf128 fmaf32 fmaf32x fmaf64
fmaf64x fmal fmax fmaxf fmaxf128 fmaxf32 fmaxf32x fmaxf64 fmaxf64x fmaximum fmaximum_mag
fmaximum_mag_num fmaximum_mag_numf fmaximum_mag_numf128 fmaximum_mag_numf32 fmaximum_mag_numf32x
fmaximum_mag_numf64 fmaximum_mag_numf64x fmaximum_mag_numl fmaximum_magf fmaximum_magf128
fmaximum_magf32 fmaximum_magf32x fmaximum_magf64 fmaximum_magf64x fmaximum_magl fmaximum_num
fmaximum_numf fmaximum_numf128 fmaximum_numf32 fmaximum_numf32x fmaximum_numf64 fmaximum_numf64x
fmaximum_numl fmaximumf fmaximumf128 fmaximumf32 fmaximumf32x fmaximumf64 fmaximumf64x fmaximuml
fmaxl fmaxmag fmaxmagf fmaxmagf128 fmaxmagf32 fmaxmagf32x fmaxmagf64 fmaxmagf64x fmaxmagl
fmemopen fmin fminf fminf128 fminf32 fminf32x fminf64 fminf64x fminimum fminimum_mag
fminimum_mag_num fminimum_mag_numf fminimum_mag_numf128 fminimum_mag_numf32 fminimum_mag_numf32x
fminimum_mag_numf64 fminimum_mag_numf64x fminimum_mag_numl fminimum_magf fminimum_magf128
fminimum_magf32 fminimum_magf32x fminimum_magf64 fminimum_magf64x fminimum_magl fminimum_num
fminimum_numf fminimum_numf128 fminimum_numf32 fminimum_numf32x fminimum_numf64 fminimum_numf64x
fminimum_numl fminimumf fminimumf128 fminimumf32 fminimumf32x fminimumf64 fminimumf64x fminimuml
fminl fminmag fminmagf fminmagf128 fminmagf32 fminmagf32x fminmagf64 fminmagf64x fminmagl fmod
fmodf fmodf128 fmodf32 fmodf32x fmodf64 fmodf64x fmodl fmul fmull fopen fopen64 fopencookie fork
fpathconf fpos64_t fpos_t fprintf fputc fputc_unlocked fputs fputs_unlocked fputwc
fputwc_unlocked fputws fputws_unlocked fread fread_unlocked free freelocale freopen freopen64
frexp frexpf frexpf128 frexpf32 frexpf32x frexpf64 frexpf64x frexpl fromfp fromfpf fromfpf128
fromfpf32 fromfpf32x fromfpf64 fromfpf64x fromfpl fromfpx fromfpxf fromfpxf128 fromfpxf32
fromfpxf32x fromfpxf64 fromfpxf64x fromfpxl fsblkcnt64_t fsblkcnt_t fscanf fseek fseeko fseeko64
fsetpos fsetpos64 fsfilcnt64_t fsfilcnt_t fsid_t fsqrt fsqrtl fsub fsubl fsync ftell ftello
ftello64 ftruncate ftruncate64 ftrylockfile funlockfile futimes futimesat fwide fwprintf fwrite
fwrite_unlocked fwscanf gamma gammaf gammal gcvt get_current_dir_name getc getc_unlocked getchar
getchar_unlocked getcpu getcwd getdate getdate_err getdate_r getdelim getdomainname
getdtablesize getegid getentropy getenv geteuid getgid getgroups gethostid gethostname getitimer
getline getloadavg getlogin getlogin_r getopt getpagesize getpass getpayload getpayloadf
getpayloadf128 getpayloadf32 getpayloadf32x getpayloadf64 getpayloadf64x getpayloadl getpgid
getpgrp getpid getppid getpt getresgid getresuid getsid getsubopt gettid gettimeofday getuid
getusershell getw getwc getwc_unlocked getwchar getwchar_unlocked getwd gid_t gmtime gmtime_r
grantpt group_member hypot hypotf hypotf128 hypotf32 hypotf32x hypotf64 hypotf64x hypotl id_t
ilogb ilogbf ilogbf128 ilogbf32 ilogbf32x ilogbf64 ilogbf64x ilogbl index initstate initstate_r
ino64_t ino_t int16_t int32_t int64_t int8_t int_fast16_t int_fast32_t int_fast64_t int_fast8_t
int_least16_t int_least32_t int_least64_t int_least8_t intmax_t intptr_t isalnum isalnum_l
isalpha isalpha_l isascii isatty isblank isblank_l iscanonical iscntrl iscntrl_l isctype isdigit
isdigit_l iseqsig isgraph isgraph_l isinff isinfl islower islower_l isnanf isnanl isprint
isprint_l ispunct ispunct_l issignaling isspace isspace_l isupper isupper_l iswalnum iswalnum_l
iswalpha iswalpha_l iswblank iswblank_l iswcntrl iswcntrl_l iswctype iswctype_l iswdigit
iswdigit_l iswgraph iswgraph_l iswlower iswlower_l iswprint iswprint_l iswpunct iswpunct_l
iswspace iswspace_l iswupper iswupper_l iswxdigit iswxdigit_l isxdigit isxdigit_l iszero
itimerspec itimerval j0 j0f j0f128 j0f32 j0f32x j0f64 j0f64x j0l j1 j1f j1f128 j1f32 j1f32x
j1f64 j1f64x j1l jn jnf jnf128 jnf32 jnf32x jnf64 jnf64x jnl jrand48 jrand48_r key_t l64a labs
lchown lcong48 lcong48_r lconv ldexp ldexpf ldexpf128 ldexpf32 ldexpf32x ldexpf64 ldexpf64x
ldexpl ldiv ldiv_t lgamma lgamma_r lgammaf lgammaf128 lgammaf128_r lgammaf32 lgammaf32_r
lgammaf32x lgammaf32x_r lgammaf64 lgammaf64_r lgammaf64x lgammaf64x_r lgammaf_r lgammal
lgammal_r link linkat llabs lldiv lldiv_t llogb llogbf llogbf128 llogbf32 llogbf32x llogbf64
llogbf64x llogbl llrint llrintf llrintf128 llrintf32 llrintf32x llrintf64 llrintf64x llrintl
llround llroundf llroundf128 llroundf32 llroundf32x llroundf64 llroundf64x llroundl locale_t
localeconv localtime localtime_r lockf lockf64 loff_t log log10 log10f log10f128 log10f32
log10f32x log10f64 log10f64x log10l log1p log1pf log1pf128 log1pf32 log1pf32x log1pf64 log1pf64x
log1pl log2 log2f log2f128 log2f32 log2f32x log2f64 log2f64x log2l logb logbf logbf128 logbf32
logbf32x logbf64 logbf64x logbl logf logf128 logf32 logf32x logf64 logf64x logl lrand48
lrand48_r lrint lrintf lrintf128 lrintf32 lrintf32x lrintf64 lrintf64x lrintl lround lroundf
lroundf128 lroundf32 lroundf32x lroundf64 lroundf64x lroundl lseek lseek64 lutimes malloc
max_align_t mblen mbrlen mbrtowc mbsinit mbsnrtowcs mbsrtowcs mbstate_t mbstowcs mbtowc memccpy
memchr memcmp memcpy memfrob memmem memmove mempcpy memrchr memset mkdtemp mkostemp mkostemp64
mkostemps mkostemps64 mkstemp mkstemp64 mkstemps mkstemps64 mktemp mktime mode_t modf modff
modff128 modff32 modff32x modff64 modff64x modfl mrand48 mrand48_r nan nanf nanf128 nanf32
nanf32x nanf64 nanf64x nanl nanosleep nearbyint nearbyintf nearbyintf128 nearbyintf32
nearbyintf32x nearbyintf64 nearbyintf64x nearbyintl newlocale nextafter nextafterf nextafterf128
nextafterf32 nextafterf32x nextafterf64 nextafterf64x nextafterl nextdown nextdownf nextdownf128
nextdownf32 nextdownf32x nextdownf64 nextdownf64x nextdownl nexttoward nexttowardf nexttowardl
nextup nextupf nextupf128 nextupf32 nextupf32x nextupf64 nextupf64x nextupl nice nlink_t nrand48
nrand48_r nullptr_t obstack obstack_printf obstack_vprintf off64_t off_t on_exit open_memstream
open_wmemstream optarg opterr optind optopt pathconf pause pclose perror pid_t pipe pipe2 popen
posix_memalign posix_openpt pow powf powf128 powf32 powf32x powf64 powf64x powl pread pread64
printf profil program_invocation_name program_invocation_short_name pselect pthread_atfork
pthread_attr_destroy pthread_attr_getaffinity_np pthread_attr_getdetachstate
pthread_attr_getguardsize pthread_attr_getinheritsched pthread_attr_getschedparam
pthread_attr_getschedpolicy pthread_attr_getscope pthread_attr_getsigmask_np
pthread_attr_getstack pthread_attr_getstackaddr pthread_attr_getstacksize pthread_attr_init
pthread_attr_setaffinity_np pthread_attr_setdetachstate pthread_attr_setguardsize
pthread_attr_setinheritsched pthread_attr_setschedparam pthread_attr_setschedpolicy
pthread_attr_setscope pthread_attr_setsigmask_np pthread_attr_setstack pthread_attr_setstackaddr
pthread_attr_setstacksize pthread_attr_t pthread_barrier_destroy pthread_barrier_init
pthread_barrier_t pthread_barrier_wait pthread_barrierattr_destroy
pthread_barrierattr_getpshared pthread_barrierattr_init pthread_barrierattr_setpshared
pthread_barrierattr_t pthread_cancel pthread_clockjoin_np pthread_cond_broadcast
pthread_cond_clockwait pthread_cond_destroy pthread_cond_init pthread_cond_signal pthread_cond_t
pthread_cond_timedwait pthread_cond_wait pthread_condattr_destroy pthread_condattr_getclock
pthread_condattr_getpshared pthread_condattr_init pthread_condattr_setclock
pthread_condattr_setpshared pthread_condattr_t pthread_create pthread_detach pthread_equal
pthread_exit pthread_getaffinity_np pthread_getattr_default_np pthread_getattr_np
pthread_getconcurrency pthread_getcpuclockid pthread_getname_np pthread_getschedparam
pthread_getspecific pthread_join pthread_key_create pthread_key_delete pthread_key_t
pthread_mutex_clocklock pthread_mutex_consistent pthread_mutex_consistent_np
pthread_mutex_destroy pthread_mutex_getprioceiling pthread_mutex_init pthread_mutex_lock
pthread_mutex_setprioceiling pthread_mutex_t pthread_mutex_timedlock pthread_mutex_trylock
pthread_mutex_unlock pthread_mutexattr_destroy pthread_mutexattr_getprioceiling
pthread_mutexattr_getprotocol pthread_mutexattr_getpshared pthread_mutexattr_getrobust
pthread_mutexattr_getrobust_np pthread_mutexattr_gettype pthread_mutexattr_init
pthread_mutexattr_setprioceiling pthread_mutexattr_setprotocol pthread_mutexattr_setpshared
pthread_mutexattr_setrobust pthread_mutexattr_setrobust_np pthread_mutexattr_settype
pthread_mutexattr_t pthread_once pthread_once_t pthread_rwlock_clockrdlock
pthread_rwlock_clockwrlock pthread_rwlock_destroy pthread_rwlock_init pthread_rwlock_rdlock
pthread_rwlock_t pthread_rwlock_timedrdlock pthread_rwlock_timedwrlock pthread_rwlock_tryrdlock
pthread_rwlock_trywrlock pthread_rwlock_unlock pthread_rwlock_wrlock pthread_rwlockattr_destroy
pthread_rwlockattr_getkind_np pthread_rwlockattr_getpshared pthread_rwlockattr_init
pthread_rwlockattr_setkind_np pthread_rwlockattr_setpshared pthread_rwlockattr_t pthread_self
pthread_setaffinity_np pthread_setattr_default_np pthread_setcancelstate pthread_setcanceltype
pthread_setconcurrency pthread_setname_np pthread_setschedparam pthread_setschedprio
pthread_setspecific pthread_spin_destroy pthread_spin_init pthread_spin_lock
pthread_spin_trylock pthread_spin_unlock pthread_spinlock_t pthread_t pthread_testcancel
pthread_timedjoin_np pthread_tryjoin_np pthread_yield ptrdiff_t ptsname ptsname_r putc
putc_unlocked putchar putchar_unlocked putenv puts putw putwc putwc_unlocked putwchar
putwchar_unlocked pwrite pwrite64 qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort qsort_r quad_t
quick_exit rand rand_r random random_data random_r rawmemchr read readlink readlinkat realloc
reallocarray realpath register_t remainder remainderf remainderf128 remainderf32 remainderf32x
remainderf64 remainderf64x remainderl remove remquo remquof remquof128 remquof32 remquof32x
remquof64 remquof64x remquol rename renameat renameat2 revoke rewind rindex rint rintf rintf128
rintf32 rintf32x rintf64 rintf64x rintl rmdir round roundeven roundevenf roundevenf128
roundevenf32 roundevenf32x roundevenf64 roundevenf64x roundevenl roundf roundf128 roundf32
roundf32x roundf64 roundf64x roundl rpmatch sbrk scalb scalbf scalbl scalbln scalblnf
scalblnf128 scalblnf32 scalblnf32x scalblnf64 scalblnf64x scalblnl scalbn scalbnf scalbnf128
scalbnf32 scalbnf32x scalbnf64 scalbnf64x scalbnl scanf sched_get_priority_max
sched_get_priority_min sched_getaffinity sched_getcpu sched_getparam sched_getscheduler
sched_param sched_rr_get_interval sched_setaffinity sched_setparam sched_setscheduler
sched_yield secure_getenv seed48 seed48_r select sem_clockwait sem_close sem_destroy
sem_getvalue sem_init sem_open sem_post sem_t sem_timedwait sem_trywait sem_unlink sem_wait
setbuf setbuffer setdomainname setegid setenv seteuid setgid sethostid sethostname setitimer
setlinebuf setlocale setlogin setns setpayload setpayloadf setpayloadf128 setpayloadf32
setpayloadf32x setpayloadf64 setpayloadf64x setpayloadl setpayloadsig setpayloadsigf
setpayloadsigf128 setpayloadsigf32 setpayloadsigf32x setpayloadsigf64 setpayloadsigf64x
setpayloadsigl setpgid setpgrp setregid setresgid setresuid setreuid setsid setstate setstate_r
settimeofday setuid setusershell setvbuf sigabbrev_np sigdescr_np sigevent signgam significand
significandf significandl sigset_t sin sincos sincosf sincosf128 sincosf32 sincosf32x sincosf64
sincosf64x sincosl sinf sinf128 sinf32 sinf32x sinf64 sinf64x sinh sinhf sinhf128 sinhf32
sinhf32x sinhf64 sinhf64x sinhl sinl size_t sleep snprintf socklen_t sprintf sqrt sqrtf sqrtf128
sqrtf32 sqrtf32x sqrtf64 sqrtf64x sqrtl srand srand48 srand48_r srandom srandom_r sscanf ssize_t
std stderr stdin stdout stpcpy stpncpy strcasecmp strcasecmp_l strcasestr strcat strchr
strchrnul strcmp strcoll strcoll_l strcpy strcspn strdup strerror strerror_l strerror_r
strerrordesc_np strerrorname_np strfromd strfromf strfromf128 strfromf32 strfromf32x strfromf64
strfromf64x strfroml strfry strftime strftime_l strlen strncasecmp strncasecmp_l strncat strncmp
strncpy strndup strnlen strpbrk strptime strptime_l strrchr strsep strsignal strspn strstr
strtod strtod_l strtof strtof128 strtof128_l strtof32 strtof32_l strtof32x strtof32x_l strtof64
strtof64_l strtof64x strtof64x_l strtof_l strtok strtok_r strtol strtol_l strtold strtold_l
strtoll strtoll_l strtoq strtoul strtoul_l strtoull strtoull_l strtouq strverscmp strxfrm
strxfrm_l suseconds_t swab swprintf swscanf symlink symlinkat sync syncfs syscall sysconf system
tan tanf tanf128 tanf32 tanf32x tanf64 tanf64x tanh tanhf tanhf128 tanhf32 tanhf32x tanhf64
tanhf64x tanhl tanl tcgetpgrp tcsetpgrp tempnam tgamma tgammaf tgammaf128 tgammaf32 tgammaf32x
tgammaf64 tgammaf64x tgammal time time_t timegm timelocal timer_create timer_delete
timer_getoverrun timer_gettime timer_settime timer_t timespec timespec_get timespec_getres
timeval timex timezone tm tmpfile tmpfile64 tmpnam tmpnam_r toascii tolower tolower_l totalorder
totalorderf totalorderf128 totalorderf32 totalorderf32x totalorderf64 totalorderf64x totalorderl
totalordermag totalordermagf totalordermagf128 totalordermagf32 totalordermagf32x
totalordermagf64 totalordermagf64x totalordermagl toupper toupper_l towctrans towctrans_l
towlower towlower_l towupper towupper_l trunc truncate truncate64 truncf truncf128 truncf32
truncf32x truncf64 truncf64x truncl ttyname ttyname_r ttyslot tzset u_char u_int u_int16_t
u_int32_t u_int64_t u_int8_t u_long u_quad_t u_short ualarm ufromfp ufromfpf ufromfpf128
ufromfpf32 ufromfpf32x ufromfpf64 ufromfpf64x ufromfpl ufromfpx ufromfpxf ufromfpxf128
ufromfpxf32 ufromfpxf32x ufromfpxf64 ufromfpxf64x ufromfpxl uid_t uint uint16_t uint32_t
uint64_t uint8_t uint_fast16_t uint_fast32_t uint_fast64_t uint_fast8_t uint_least16_t
uint_least32_t uint_least64_t uint_least8_t uintmax_t uintptr_t ulong ungetc ungetwc unlink
unlinkat unlockpt unsetenv unshare useconds_t uselocale ushort usleep utimes va_list valloc
vasprintf vdprintf vfork vfprintf vfscanf vfwprintf vfwscanf vhangup vprintf vscanf vsnprintf
vsprintf vsscanf vswprintf vswscanf vwprintf vwscanf wcpcpy wcpncpy wcrtomb wcscasecmp
wcscasecmp_l wcscat wcschr wcschrnul wcscmp wcscoll wcscoll_l wcscpy wcscspn wcsdup wcsftime
wcsftime_l wcslen wcsncasecmp wcsncasecmp_l wcsncat wcsncmp wcsncpy wcsnlen wcsnrtombs wcspbrk
wcsrchr wcsrtombs wcsspn wcsstr wcstod wcstod_l wcstof wcstof128 wcstof128_l wcstof32 wcstof32_l
wcstof32x wcstof32x_l wcstof64 wcstof64_l wcstof64x wcstof64x_l wcstof_l wcstok wcstol wcstol_l
wcstold wcstold_l wcstoll wcstoll_l wcstombs wcstoq wcstoul wcstoul_l wcstoull wcstoull_l
wcstouq wcswcs wcswidth wcsxfrm wcsxfrm_l wctob wctomb wctrans wctrans_l wctrans_t wctype
wctype_l wctype_t wcwidth wint_t wmemchr wmemcmp wmemcpy wmemmove wmempcpy wmemset wprintf write
wscanf y0 y0f y0f128 y0f32 y0f32x y0f64 y0f64x y0l y1 y1f y1f128 y1f32 y1f32x y1f64 y1f64x y1l
yn ynf ynf128 ynf32 ynf32x ynf64 ynf64x ynl
"""
C_LIBRARY_NAMES = frozenset(_DECLARED.split())
